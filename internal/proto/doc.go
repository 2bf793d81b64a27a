// Package proto is rpcbench's wire format: frames and their encoding,
// statuses, the incremental Decoder and the FrameReader that every
// connection reads through. It imports nothing else of the project. The
// protocol is described in SPEC.md.
package proto
