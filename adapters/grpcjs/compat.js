'use strict';
// What differs between the grpc-js releases the adapter runs against
// (internal/stackbuild's matrix: 1.8 to 1.14), decided by the version
// grpc-js's own package.json gives, so that the shipped release's
// behaviour is untouched.

/**
 * serverNeedsStart: before 1.10 a grpc-js Server bound with bindAsync
 * refuses every stream (REFUSED_STREAM, "Stream refused by server")
 * until server.start() is called; 1.10 starts serving on bind and
 * deprecates start(), which then only logs a warning.
 */
function serverNeedsStart(version) {
  const [major, minor] = version.split('.').map(Number);
  return major < 1 || (major === 1 && minor < 10);
}

module.exports = { serverNeedsStart };
