'use strict';
// The canonical gRPC status names as adapters/PROTOCOL.md spells them, by
// number (grpc/grpc doc/statuscodes.md).

const codeNames = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND',
  'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED',
  'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED',
];

/**
 * codeOf returns the protocol's {code, code_num} for a status code as
 * grpc-js surfaced it. grpc-js passes a server's grpc-status through
 * Number() unchecked (subchannel-call.ts), so it can surface 17 or NaN;
 * such a code is reported as it is, UNKNOWN_CODE_17 (code_num -1 when
 * it is not even an integer), which the harness rejects as bad output:
 * the adapter does not remap what the library returned.
 */
function codeOf(n) {
  if (Number.isInteger(n) && n >= 0 && n < codeNames.length) {
    return { code: codeNames[n], code_num: n };
  }
  return { code: `UNKNOWN_CODE_${n}`, code_num: Number.isInteger(n) ? n : -1 };
}

module.exports = { codeNames, codeOf };
