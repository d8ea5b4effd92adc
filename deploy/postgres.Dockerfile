# PostgreSQL 15 from Debian's packages, for the compose stack's ledger (deploy/compose.yaml). Build
# from the repository root; BASE as in deploy/Dockerfile (deploy/podman.sh passes its own):
#   podman build -f deploy/postgres.Dockerfile -t sluice-postgres .
ARG BASE=docker.io/library/debian:bookworm-slim
FROM ${BASE}
# The package would make a cluster of its own; the entry point makes one in the volume instead.
RUN mkdir -p /etc/postgresql-common/createcluster.d \
  && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/no-main.conf \
  && apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
  && rm -rf /var/lib/apt/lists/* /usr/share/doc /usr/share/man \
  && install -d -o postgres -g postgres -m 700 /var/lib/postgresql/data
COPY deploy/postgres.sh /usr/local/bin/sluice-postgres
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/bin:/usr/bin:/bin PGDATA=/var/lib/postgresql/data
USER postgres
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/sluice-postgres"]
