// Package leftover names what a process makes for its own use only, such
// as temporary directories and test databases, after that process, and
// removes what processes that no longer run left behind.
//
// A process killed outright (SIGKILL, the OOM killer, a crash) cannot
// clean up: its directories and databases outlive it. So each carries its
// owner in its name, rpcbench-<space>-<pid>-<start>-... (databases with
// '_' for '-'), where start is the owner's start time, so that a later
// process given the same pid is not taken for it, and space tags the boot
// and pid namespace the pid belongs to, so that a process in another
// container or an earlier boot is not judged by this one's process table.
// Sweep, run when rpcbench or a test helper starts, removes the
// directories whose owner is gone; pgcluster drops such databases on a
// server that outlives its clients. What a live process owns is never
// removed, nor anything whose owner this process cannot see.
//
// Only what is removed when its owner ends may be named this way: a
// directory a process leaves for its user to read (rpcbench diff's run)
// must not carry its owner.
package leftover
