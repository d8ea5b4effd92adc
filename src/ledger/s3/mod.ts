/**
 * The S3 ledger backend: one object per committed batch. Loaded lazily
 * (`loadS3Backend`): the AWS SDK is large.
 *
 * @module
 */

export { S3Backend, type S3Options } from "./s3_backend.ts";
