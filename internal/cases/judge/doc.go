// Package judge runs the grpc group's scenarios against the stacks under
// test and judges what each observed against the stack's pins: the
// columns (stack and configuration), the invariants, and the T and
// ServerT a client or server scenario drives.
package judge
