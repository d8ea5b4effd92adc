// The baseline: a bare Deno.serve handler that reads the body and answers 201.
const port = Number(Deno.args[0] ?? 0);
const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, async (request) => {
  await request.arrayBuffer();
  return new Response('{"group":"e000001-g00000000","wallclock":1}', {
    status: 201,
    headers: { "content-type": "application/json" },
  });
});
console.log(`listening ${server.addr.port}`);
