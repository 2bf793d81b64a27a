'use strict';
// Channels and calls through grpc-js: one grpc.Client per channel id,
// configured only by what the call's channel carries, and each call made
// once with makeUnaryRequest, its outcome reported as grpc-js returned
// it.

const { performance } = require('node:perf_hooks');
const grpc = require('@grpc/grpc-js');
const bank = require('./bank');
const { codeOf } = require('./codes');
const { kind } = require('./wire');

/** CallError is a call the adapter did not invoke: its kind and text. */
class CallError extends Error {
  constructor(k, text) {
    super(text);
    this.kind = k;
  }
}

/**
 * channelOptions returns the grpc-js channel options for w, a decoded
 * channel: the service config as the grpc.service_config option (JSON
 * text), keepalive as grpc.keepalive_*; nothing else, so every other
 * option is grpc-js's default.
 */
function channelOptions(w) {
  const opts = {};
  if (w.service_config !== undefined) {
    opts['grpc.service_config'] = JSON.stringify(w.service_config);
  }
  if (w.keepalive !== undefined) {
    opts['grpc.keepalive_time_ms'] = w.keepalive.time_ms;
    opts['grpc.keepalive_timeout_ms'] = w.keepalive.timeout_ms;
    opts['grpc.keepalive_permit_without_calls'] = w.keepalive.permit_without_stream ? 1 : 0;
  }
  return opts;
}

/** channel is one grpc.Client and the configuration it was built with. */
class channel {
  constructor(w) {
    this.target = w.target;
    // The options compare two spellings of one configuration equal.
    this.key = JSON.stringify(channelOptions(w));
    this.client = new grpc.Client(w.target, grpc.credentials.createInsecure(), channelOptions(w));
  }

  same(w) {
    return this.target === w.target && this.key === JSON.stringify(channelOptions(w));
  }

  close() {
    this.client.close();
  }
}

/** channels are the channels of one session, by id. */
class channels {
  constructor(log) {
    this.log = log;
    this.byID = new Map();
  }

  /**
   * get returns the channel w names, building it the first time; it
   * throws CallError when w conflicts with the channel's first
   * configuration or grpc-js cannot build it (then nothing is kept, and a
   * later call on the id tries again).
   */
  get(w) {
    const ch = this.byID.get(w.id);
    if (ch) {
      if (!ch.same(w)) {
        throw new CallError(kind.protocol, `channel ${w.id} was first configured otherwise`);
      }
      return ch;
    }
    let built;
    try {
      built = new channel(w);
    } catch (err) {
      throw new CallError(kind.config, err.message);
    }
    this.byID.set(w.id, built);
    this.log(`channel ${w.id}: ${w.target}, options ${built.key}`);
    return built;
  }

  closeAll() {
    for (const ch of this.byID.values()) {
      ch.close();
    }
    this.byID.clear();
  }
}

/** mdObject is md as the protocol carries it: name → strings, -bin values base64. */
function mdObject(md) {
  const out = {};
  if (!md) {
    return out;
  }
  for (const [k, vs] of Object.entries(md.toJSON())) {
    out[k] = vs.map(v => (Buffer.isBuffer(v) ? v.toString('base64') : String(v)));
  }
  return out;
}

/**
 * prepare checks c, a decoded call, against the Bank methods and builds
 * what invoking it needs; it throws CallError for what is not invoked.
 */
function prepare(c, chans) {
  const m = bank.methods[c.method];
  if (!m) {
    throw new CallError(kind.unsupported, `no method "${c.method}"`);
  }
  let req;
  try {
    req = bank.fromJSON(m.request, c.request);
  } catch (err) {
    throw new CallError(kind.badRequest, err.message);
  }
  const md = new grpc.Metadata({ waitForReady: c.wait_for_ready });
  try {
    for (const [k, v] of Object.entries(c.metadata)) {
      // A -bin value goes as the string's bytes, as grpc-go sends a
      // string it is given.
      md.add(k, k.toLowerCase().endsWith('-bin') ? Buffer.from(v, 'utf8') : v);
    }
  } catch (err) {
    throw new CallError(kind.unsupported, `metadata: ${err.message}`);
  }
  const ch = chans.get(c.channel);
  return { path: '/' + c.method, m, req, md, ch };
}

/**
 * invoke makes the prepared call once and resolves to its result
 * message. The deadline is grpc-js's per-call deadline, over every
 * attempt; headers come from the call's metadata event, the status and
 * trailers from its status event, which grpc-js emits right after the
 * callback.
 */
function invoke(id, p, deadlineMS) {
  return new Promise(resolve => {
    let headers;
    let outcome;
    const start = performance.now();
    const deadline = Date.now() + deadlineMS;
    const call = p.ch.client.makeUnaryRequest(
      p.path,
      msg => bank.encode(p.m.request, msg),
      buf => bank.decode(p.m.response, buf),
      p.req, p.md, { deadline },
      (err, resp) => {
        outcome = { err, resp, elapsed: performance.now() - start };
      });
    call.on('metadata', md => {
      headers = md;
    });
    call.on('status', st => {
      // What the callback was given is what the library returned; the
      // status event can say OK where the callback got an error (grpc-js
      // fails an OK without a message as UNIMPLEMENTED).
      const err = outcome.err;
      const code = err ? err.code : st.code;
      resolve({
        type: 'result', id, ...codeOf(code),
        message: err ? err.details : st.details,
        response: err ? null : bank.toJSON(p.m.response, outcome.resp),
        elapsed_ms: Math.round(outcome.elapsed * 1000) / 1000,
        headers: mdObject(headers),
        trailers: mdObject(err ? err.metadata : st.metadata),
      });
    });
  });
}

module.exports = { CallError, channels, channelOptions, prepare, invoke };
