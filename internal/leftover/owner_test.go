package leftover

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, sep string
		want      Owner
		ok        bool
	}{
		{"rpcbench-0123abcd-42-9000-logs-123", "-", Owner{"0123abcd", 42, 9000}, true},
		{"rpcbench-0123abcd-42-9000-", "-", Owner{"0123abcd", 42, 9000}, true},
		{"rpcbench_0123abcd_42_9000_3_durable_dedup", "_", Owner{"0123abcd", 42, 9000}, true},
		{"rpcbench_0123abcd_42_9000_3_durable_dedup", "-", Owner{}, false},
		{"rpcbench-logs-403782809", "-", Owner{}, false},      // before owners were named
		{"pgcluster-1171995991", "-", Owner{}, false},         // likewise
		{"rpcbench-42-9000-0", "-", Owner{}, false},           // a nethost namespace
		{"rpcbench-0123ABCD-42-9000-x", "-", Owner{}, false},  // Space is lower-case
		{"rpcbench-0123abcg-42-9000-x", "-", Owner{}, false},  // not hex
		{"rpcbench-0123abcd-0-9000-x", "-", Owner{}, false},   // no pid 0
		{"rpcbench-0123abcd-x42-9000-x", "-", Owner{}, false}, // pid
		{"rpcbench-0123abcd-42--x", "-", Owner{}, false},      // start
		{"rpcbench-0123abcd-42-9000", "-", Owner{}, false},    // not a name's start
		{"xrpcbench-0123abcd-42-9000-x", "-", Owner{}, false}, // prefix
		{"rpcbench_0123abcd_42_9000_3_db", "_", Owner{"0123abcd", 42, 9000}, true},
	}
	for _, tt := range tests {
		got, ok := Parse(tt.name, tt.sep)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Parse(%q, %q) = %+v, %v; want %+v, %v", tt.name, tt.sep, got, ok, tt.want, tt.ok)
		}
	}
	me := selfOwner(t)
	for _, sep := range []string{"-", "_"} {
		if got, ok := Parse(me.Name(sep)+"what", sep); !ok || got != me {
			t.Errorf("Parse(Self().Name(%q)+...) = %+v, %v; want %+v", sep, got, ok, me)
		}
	}
}

func selfOwner(t *testing.T) Owner {
	t.Helper()
	me, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	return me
}

// exited returns the pid and start time of a process that has exited
// and, with reap, been reaped; without, it is a zombie until t ends.
func exited(t *testing.T, reap bool) (int, uint64) {
	t.Helper()
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	// Wait for it to exit without reaping it: its /proc entry stays.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	st, err := stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.state != 'Z' {
		t.Fatalf("exited child %d: state %c, want Z", pid, st.state)
	}
	if reap {
		cmd.Wait()
	} else {
		t.Cleanup(func() { cmd.Wait() })
	}
	return pid, st.start
}

// TestGone: an owner is gone when no process has its pid, when the
// process with its pid started at another time (the pid was reused), or
// when it is a zombie; never when it runs, nor when it is in another
// boot or pid namespace.
func TestGone(t *testing.T) {
	me := selfOwner(t)
	reapedPID, reapedStart := exited(t, true)
	zombiePID, zombieStart := exited(t, false)
	parentStart, err := stat(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    Owner
		want bool
	}{
		{"this_process", me, false},
		{"its_parent", Owner{me.Space, os.Getppid(), parentStart.start}, false},
		{"pid_reused", Owner{me.Space, me.PID, me.Start + 1}, true},
		{"pid_reused_earlier", Owner{me.Space, me.PID, me.Start - 1}, true},
		{"exited", Owner{me.Space, reapedPID, reapedStart}, true},
		{"zombie", Owner{me.Space, zombiePID, zombieStart}, true},
		{"other_space_exited", Owner{"00000000", reapedPID, reapedStart}, false},
		{"other_space_reused", Owner{"00000000", me.PID, me.Start + 1}, false},
	}
	if me.Space == "00000000" {
		t.Skip("this space is 00000000, the tests' other one")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.Gone(); got != tt.want {
				t.Errorf("%+v.Gone() = %v, want %v", tt.o, got, tt.want)
			}
		})
	}
}

func TestHidesPIDs(t *testing.T) {
	const other = "25 22 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
	tests := []struct {
		mountinfo string
		want      bool
	}{
		{other + "22 27 0:21 / /proc rw,relatime - proc proc rw\n", false},
		{other + "22 27 0:21 / /proc rw,relatime - proc proc rw,hidepid=2\n", true},
		{other + "22 27 0:21 / /proc rw,relatime - proc proc rw,hidepid=invisible,gid=4\n", true},
		{other + "22 27 0:21 / /proc rw,relatime - proc proc rw,hidepid=0\n", false},
		{other + "22 27 0:21 / /proc rw - proc proc rw,hidepid=off\n", false},
		{"22 27 0:21 / /mnt/proc rw - proc proc rw,hidepid=2\n", false},
		{"22 27 0:21 / /proc rw - proc\n", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := hidesPIDs(tt.mountinfo); got != tt.want {
			t.Errorf("hidesPIDs(%q) = %v, want %v", tt.mountinfo, got, tt.want)
		}
	}
}
