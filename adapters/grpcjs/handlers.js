'use strict';
// The Bank service's handlers in serve mode (adapters/SERVER-PROTOCOL.md,
// "The handlers"): each does what an ordinary grpc-js application's
// would, through the call object's documented API (metadata,
// getDeadline(), cancelled and the 'cancelled' event), and writes a
// start, exec and end line saying what it did.

const grpc = require('@grpc/grpc-js');
const { codeNames } = require('./codes');

// setTimeout takes at most 2^31-1 ms and fires after 1 ms for more
// (Node's TimeoutOverflowWarning); a longer sleep or work waits this
// long, which is 24.8 days: a sleep in effect until the call ends.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** callName is the request's x-rpcbench-call value, its first one; "" when it has none. */
function callName(call) {
  const v = call.metadata.get('x-rpcbench-call');
  return v.length > 0 ? String(v[0]) : '';
}

/** deadlineMS is what is left of the call's deadline now, in ms; null when it has none. */
function deadlineMS(call) {
  const d = +call.getDeadline(); // a Date or ms since the epoch; Infinity for none
  return Number.isFinite(d) ? d - Date.now() : null;
}

/**
 * ctxState is the call's state as the protocol names it. grpc-js tells
 * the handler only that the call is no longer active (call.cancelled,
 * the 'cancelled' event), the same for a client's RST_STREAM, a closed
 * connection and its own deadline timer; so a call whose deadline
 * (getDeadline(), ms since the epoch) is not later than Date.now() is
 * deadline_exceeded, whether or not grpc-js has cancelled it yet; one
 * cancelled before its deadline is cancelled; any other is active.
 */
function ctxState(call) {
  if (Date.now() >= +call.getDeadline()) {
    return 'deadline_exceeded';
  }
  return call.cancelled ? 'cancelled' : 'active';
}

/**
 * sleep resolves after ms or once the call ends, whichever is first: to
 * true when the call ended first.
 */
function sleep(call, ms) {
  if (call.cancelled) {
    return Promise.resolve(true);
  }
  return new Promise(resolve => {
    const onCancelled = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      call.removeListener('cancelled', onCancelled);
      resolve(false);
    }, Math.min(ms, MAX_TIMER_MS));
    call.once('cancelled', onCancelled);
  });
}

/**
 * work resolves after ms, blind to the call: no 'cancelled' listener, no
 * look at call.cancelled, as a CPU-bound step or a call that takes no
 * call object would be; whatever grpc-js does to the call meanwhile,
 * the handler executes after it.
 */
function work(ms) {
  return new Promise(resolve => setTimeout(resolve, Math.min(ms, MAX_TIMER_MS)));
}

/**
 * handlers returns the Bank implementation for Server.addService: its
 * handlers keep their accounts in bank (a ledger) and write their events
 * with send.
 */
function handlers(bank, send) {
  // account runs Get or Debit's steps; apply executes, given the request.
  const account = (method, apply) => async (call, callback) => {
    const name = callName(call);
    const req = call.request;
    const left = deadlineMS(call);
    send({ type: 'start', call: name, method, deadline_ms: left });
    const end = (executed, code) => {
      send({ type: 'end', call: name, method, executed, ctx: ctxState(call), code: codeNames[code] });
    };
    if (req.sleep_ms > 0n && await sleep(call, Number(req.sleep_ms))) {
      const st = ctxState(call) === 'deadline_exceeded' ? grpc.status.DEADLINE_EXCEEDED : grpc.status.CANCELLED;
      end(false, st);
      callback({ code: st, details: 'the call ended while the handler slept' });
      return;
    }
    if (req.work_ms > 0n) {
      await work(Number(req.work_ms));
    }
    if (method === 'Debit' && req.amount <= 0n) {
      end(false, grpc.status.INVALID_ARGUMENT);
      callback({ code: grpc.status.INVALID_ARGUMENT, details: `amount ${req.amount} is not positive` });
      return;
    }
    const a = apply(req);
    send({ type: 'exec', call: name, method, account: req.account, amount: method === 'Debit' ? req.amount : 0n, balance: a.balance });
    end(true, grpc.status.OK);
    callback(null, {
      account: req.account, balance: a.balance, exec: a.exec, replayed: false,
      budget_ms: left === null ? 0n : BigInt(Math.trunc(left)),
    });
  };
  return {
    Get: account('Get', req => bank.get(req.account)),
    Debit: account('Debit', req => bank.debit(req.account, req.amount)),
    Echo(call, callback) {
      const name = callName(call);
      send({ type: 'start', call: name, method: 'Echo', deadline_ms: deadlineMS(call) });
      send({ type: 'end', call: name, method: 'Echo', executed: false, ctx: ctxState(call), code: 'OK' });
      callback(null, { payload: call.request.payload });
    },
  };
}

module.exports = { handlers, ctxState, callName };
