// Entry of the DynoSim Worker: the generated syumai/workers glue
// (./worker.mjs, from `go tool workers-assets-gen`), with its failures kept
// in the API's shape. An exception out of the glue (the Go program exited
// or its instance failed) would otherwise be the runtime's plain-text 500;
// here it is {"error": "internal error: ..."}. `make worker` copies this file
// into build/worker/ beside the glue; build/wrangler.jsonc names it as main.
import worker from './worker.mjs';

function jsonError(status, message) {
  return new Response(JSON.stringify({ error: message.split(/\s+/).join(' ').trim() }) + '\n', {
    status,
    headers: {
      'content-type': 'application/json',
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
      'access-control-allow-origin': '*',
    },
  });
}

export default {
  async fetch(req, env, ctx) {
    try {
      return await worker.fetch(req, env, ctx);
    } catch (e) {
      return jsonError(500, `internal error: ${e && e.message ? e.message : String(e)}`);
    }
  },
};
