/** The bare handler every ceiling thread runs: read the body, answer 201. */
export async function bareHandler(request: Request): Promise<Response> {
  await request.arrayBuffer();
  return new Response('{"group":"e000001-g00000000","wallclock":1}', {
    status: 201,
    headers: { "content-type": "application/json" },
  });
}
