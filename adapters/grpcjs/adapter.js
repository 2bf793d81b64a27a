#!/usr/bin/env node
'use strict';
// rpcbench's client-under-test adapter for @grpc/grpc-js: it speaks
// adapters/PROTOCOL.md (rpcbench-adapter/1) on stdin and stdout and makes
// each call once through grpc-js's makeUnaryRequest, configured only by
// what the call's channel carries. It never retries or judges; its own
// logs and grpc-js's go to stderr. With the argument `serve` it is the
// server-under-test adapter instead (serve.js).

const fs = require('node:fs');
const path = require('node:path');
const wire = require('./wire');
const { CallError, channels, prepare, invoke } = require('./call');

const DRAIN_TIMEOUT_MS = 2000; // how long shutdown waits for calls in flight

/**
 * grpcJSVersion is the version of the grpc-js this process loads, from
 * that package's own package.json.
 */
function grpcJSVersion() {
  const main = require.resolve('@grpc/grpc-js'); // <pkg>/build/src/index.js
  const pkg = path.join(path.dirname(main), '..', '..', 'package.json');
  const { name, version } = JSON.parse(fs.readFileSync(pkg, 'utf8'));
  if (name !== '@grpc/grpc-js' || typeof version !== 'string') {
    throw new Error(`grpcjs: ${pkg} is not @grpc/grpc-js's package.json`);
  }
  return version;
}

/**
 * capabilities are what grpc-js 1.14 implements (README.md beside this
 * file cites the source lines for each). They hold from 1.8, the oldest
 * release internal/stackbuild builds: retrying-call.ts has retries,
 * hedging, throttling, pushback and refused-stream retries there too,
 * and this adapter's tests (hedging, transparent retry included) pass
 * against 1.8.22, 1.9.15, 1.10.11 and 1.12.6.
 */
const capabilities = {
  retry_policy: true,
  hedging: true,
  throttling: true,
  transparent_retry: true,
  keepalive: true,
  pushback: true,
  wait_for_ready: true,
  // grpc-js's retry policy has no perAttemptRecvTimeout (its
  // service-config.ts does not parse one).
  per_attempt_timeout: false,
};

/** session is one adapter process's protocol session. */
class session {
  constructor(out, log) {
    this.out = out;
    this.log = log;
    this.seen = new Set(); // call ids used so far
    this.inFlight = new Set(); // promises of the calls not yet answered
    this.chans = new channels(log);
  }

  fatal(text) {
    this.log(`fatal: ${text}`);
    this.out.send({ type: 'fatal', text });
    return 2;
  }

  callError(id, k, text) {
    this.log(`call ${id}: call_error ${k}: ${text}`);
    this.out.send({ type: 'call_error', id, kind: k, text });
  }

  /**
   * run reads the harness's lines from input until it ends and returns
   * the exit status.
   */
  async run(input) {
    let inited = false;
    let n = 0;
    try {
      for await (const line of wire.lines(input)) {
        n++;
        let obj;
        try {
          obj = JSON.parse(line.toString('utf8'));
        } catch (err) {
          return this.fatal(`line ${n}: not a JSON object: ${err.message}`);
        }
        if (!wire.isObject(obj)) {
          return this.fatal(`line ${n}: not a JSON object`);
        }
        const typ = obj.type;
        if (typeof typ !== 'string') {
          return this.fatal(`line ${n}: no string "type"`);
        }
        if (!inited && typ !== 'init') {
          return this.fatal(`line ${n}: ${typ} before init`);
        }
        switch (typ) {
          case 'init': {
            let w;
            try {
              w = wire.decodeInit(obj);
            } catch (err) {
              return this.fatal(`line ${n}: bad init: ${err.message}`);
            }
            if (inited) {
              return this.fatal(`line ${n}: bad init: a second init`);
            }
            inited = true;
            this.log(`init: protocol ${w.protocol}, scenario ${JSON.stringify(w.scenario ?? '')}`);
            this.out.send({
              type: 'init_ok', protocol: wire.PROTOCOL, stack: 'grpc-js', version: grpcJSVersion(),
              runtime: `node ${process.version}`, capabilities,
            });
            break;
          }
          case 'call':
            if (!Number.isSafeInteger(obj.id) || obj.id < 1) {
              return this.fatal(`line ${n}: call without a usable id`);
            }
            this.startCall(obj);
            break;
          case 'shutdown':
            try {
              wire.decodeShutdown(obj);
            } catch (err) {
              return this.fatal(`line ${n}: bad shutdown: ${err.message}`);
            }
            await this.drain();
            this.out.send({ type: 'shutdown_ok' });
            break;
          default:
            return this.fatal(`line ${n}: unknown type ${JSON.stringify(typ)}`);
        }
      }
    } catch (err) {
      return this.fatal(`reading stdin after line ${n}: ${err.message}`);
    }
    await this.drain();
    return 0;
  }

  /** startCall checks a call whose id is usable and starts it. */
  startCall(obj) {
    const id = obj.id;
    if (this.seen.has(id)) {
      this.callError(id, wire.kind.duplicateID, `id ${id} was used before`);
      return;
    }
    this.seen.add(id);
    let c;
    try {
      c = wire.decodeCall(obj);
    } catch (err) {
      if (!(err instanceof wire.ProtocolError)) {
        throw err;
      }
      this.callError(id, wire.kind.protocol, err.message);
      return;
    }
    let p;
    try {
      p = prepare(c, this.chans);
    } catch (err) {
      if (!(err instanceof CallError)) {
        throw err;
      }
      this.callError(id, err.kind, err.message);
      return;
    }
    const done = invoke(id, p, c.deadline_ms).then(r => {
      this.out.send(r);
      this.inFlight.delete(done);
    });
    this.inFlight.add(done);
  }

  /**
   * drain waits up to DRAIN_TIMEOUT_MS for the calls in flight, then
   * closes every channel.
   */
  async drain() {
    let timer;
    const timeout = new Promise(resolve => {
      timer = setTimeout(() => resolve(false), DRAIN_TIMEOUT_MS);
    });
    const all = Promise.all([...this.inFlight]).then(() => true);
    if (!(await Promise.race([all, timeout]))) {
      this.log(`shutdown: ${this.inFlight.size} calls still in flight after ${DRAIN_TIMEOUT_MS} ms; closing their channels`);
    }
    clearTimeout(timer);
    this.chans.closeAll();
  }
}

async function main() {
  const log = text => process.stderr.write(`grpcjs: ${new Date().toISOString()} ${text}\n`);
  process.stdout.on('error', err => {
    // The harness is gone; nobody reads what this process would say.
    log(`stdout: ${err.message}`);
    process.exit(1);
  });
  const out = new wire.lineWriter(process.stdout);
  const code = await new session(out, log).run(process.stdin);
  await out.flushed();
  process.exit(code);
}

if (require.main === module) {
  const mode = process.argv[2] === 'serve' ? () => require('./serve').main(grpcJSVersion()) : main;
  mode().catch(err => {
    process.stderr.write(`grpcjs: ${err.stack}\n`);
    process.exit(1);
  });
}

module.exports = { capabilities, grpcJSVersion };
