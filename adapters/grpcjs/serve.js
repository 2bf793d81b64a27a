'use strict';
// rpcbench's server-under-test adapter for @grpc/grpc-js (`adapter.js
// serve`): it speaks adapters/SERVER-PROTOCOL.md (rpcbench-server/1) on
// stdin and stdout and serves the Bank with a grpc-js Server at its
// default options; handlers.js says what the handlers do.

const grpc = require('@grpc/grpc-js');
const bank = require('./bank');
const wire = require('./wire');
const servewire = require('./servewire');
const { handlers } = require('./handlers');
const { ledger } = require('./ledger');
const { serverNeedsStart } = require('./compat');

const GRACE_MS = 2000; // how long shutdown lets calls in flight finish

/** session is one serve-mode process's protocol session. */
class session {
  constructor(out, log, version) {
    this.out = out;
    this.log = log;
    this.version = version;
    this.server = null; // the grpc.Server, once init has started it
    this.stopped = null; // a promise, once stopping began
  }

  fatal(text) {
    this.log(`fatal: ${text}`);
    this.out.send({ type: 'fatal', text });
    return 2;
  }

  /** serve starts the Bank on 127.0.0.1, a port the kernel picks, and resolves to its address. */
  async serve() {
    const server = new grpc.Server();
    server.addService(bank.service, handlers(new ledger(), msg => this.out.send(msg)));
    this.server = server;
    const port = await new Promise((resolve, reject) => {
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(),
        (err, p) => (err ? reject(err) : resolve(p)));
    });
    if (serverNeedsStart(this.version)) {
      server.start();
    }
    return `127.0.0.1:${port}`;
  }

  /**
   * stop shuts the server down: gracefully, letting calls in flight
   * finish, for at most GRACE_MS, then forcibly. It does it once; later
   * calls resolve when that is done.
   */
  stop() {
    if (!this.stopped) {
      this.stopped = this.server ? this.shutdown(this.server) : Promise.resolve();
    }
    return this.stopped;
  }

  async shutdown(server) {
    let timer;
    const graceful = new Promise(resolve => server.tryShutdown(err => {
      if (err) {
        this.log(`shutdown: tryShutdown: ${err.message}`);
      }
      resolve(true);
    }));
    const late = new Promise(resolve => {
      timer = setTimeout(() => resolve(false), GRACE_MS);
    });
    if (!(await Promise.race([graceful, late]))) {
      this.log(`shutdown: calls still in flight after ${GRACE_MS} ms; forcing`);
      server.forceShutdown();
    }
    clearTimeout(timer);
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
              w = servewire.decodeInit(obj);
            } catch (err) {
              return this.fatal(`line ${n}: bad init: ${err.message}`);
            }
            if (inited) {
              return this.fatal(`line ${n}: bad init: a second init`);
            }
            inited = true;
            this.log(`init: protocol ${w.protocol}, scenario ${JSON.stringify(w.scenario ?? '')}`);
            let addr;
            try {
              addr = await this.serve();
            } catch (err) {
              return this.fatal(`serving: ${err.message}`);
            }
            this.log(`serving on ${addr}`);
            this.out.send({
              type: 'serving', protocol: servewire.PROTOCOL, stack: 'grpc-js', version: this.version,
              runtime: `node ${process.version}`, addr,
            });
            break;
          }
          case 'shutdown':
            try {
              servewire.decodeShutdown(obj);
            } catch (err) {
              return this.fatal(`line ${n}: bad shutdown: ${err.message}`);
            }
            await this.stop();
            this.out.send({ type: 'shutdown_ok' });
            break;
          default:
            return this.fatal(`line ${n}: unknown type ${JSON.stringify(typ)}`);
        }
      }
    } catch (err) {
      return this.fatal(`reading stdin after line ${n}: ${err.message}`);
    }
    await this.stop();
    return 0;
  }
}

/** main runs serve mode on the process's stdin and stdout and exits with its status. */
async function main(version) {
  const log = text => process.stderr.write(`grpcjs serve: ${new Date().toISOString()} ${text}\n`);
  process.stdout.on('error', err => {
    // The harness is gone; nobody reads what this process would say.
    log(`stdout: ${err.message}`);
    process.exit(1);
  });
  const out = new servewire.eventWriter(process.stdout);
  const s = new session(out, log, version);
  const code = await s.run(process.stdin);
  if (code !== 0 && s.server) {
    s.server.forceShutdown();
  }
  await out.flushed();
  process.exit(code);
}

module.exports = { main, session };
