'use strict';
// The serve mode's bank (adapters/SERVER-PROTOCOL.md, "The handlers"):
// one in-memory map from account to balance, shared by every handler of
// the process.

/** OPENING is the balance of an account not seen before. */
const OPENING = 1000n;

/**
 * ledger is the bank. Amounts and balances are BigInt, as bank.js holds
 * int64 fields, and a balance wraps at int64 as the wire's int64 would.
 * Node runs every handler on one thread and no method here awaits, so
 * each method runs whole before another handler's code: that is the
 * protocol's "one lock".
 */
class ledger {
  constructor() {
    this.accounts = new Map(); // account → { balance, exec }
  }

  entry(account) {
    let e = this.accounts.get(account);
    if (!e) {
      e = { balance: OPENING, exec: 0n };
      this.accounts.set(account, e);
    }
    return e;
  }

  /** get returns account's balance and the debits it has executed. */
  get(account) {
    const e = this.entry(account);
    return { balance: e.balance, exec: e.exec };
  }

  /**
   * debit takes amount, which the caller has checked is positive, from
   * account (a balance may go negative) and returns the account after it.
   */
  debit(account, amount) {
    const e = this.entry(account);
    e.balance = BigInt.asIntN(64, e.balance - amount);
    e.exec++;
    return { balance: e.balance, exec: e.exec };
  }
}

module.exports = { OPENING, ledger };
