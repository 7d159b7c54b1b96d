// Stands in for Cloudflare's Cron Triggers when the worker runs in workerd
// (examples/serverless/workerd.capnp): every request delivers one scheduled
// event to the main worker through a service binding, so its `scheduled()`
// handler runs as a Cron Trigger would run it, and answers the outcome.
export default {
  async fetch(_request, env) {
    const result = await env.MAIN.scheduled({ cron: "* * * * *", scheduledTime: new Date() });
    return Response.json(result);
  },
};
