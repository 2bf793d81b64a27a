package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// app is what every command shares: where it writes, which scenarios
// exist, how to find the default rpcserver, and the persistent flags.
// Tests build one with fakes.
type app struct {
	// Out receives data: CASE lines, summaries, listings, differences.
	Out io.Writer
	// Err receives status messages and errors.
	Err io.Writer
	// Scenarios is every scenario in run order.
	Scenarios scenario.Registry
	// Executable locates the running binary; rpcserver is looked for
	// next to it (os.Executable in production).
	Executable func() (string, error)

	// Server is the --server flag: the rpcserver binary, "" for the
	// default.
	Server string
	// Color is the --color flag.
	Color report.ColorMode
}

// execute runs rpcbench with args and returns the process exit code. It
// is main without os.Exit. A write to stdout that fails because its
// reader has gone (EPIPE, as `rpcbench all | head -2` does) ends the
// command as SIGPIPE would, but only once it has cleaned up.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout = &closedPipe{w: stdout, cancel: cancel}
	a := &app{Out: stdout, Err: stderr, Scenarios: cases.Default(), Executable: os.Executable}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if stdoutClosed(ctx) && !errors.Is(err, errInterrupted) {
		// A command that ended on its failed write, as list does.
		err = fmt.Errorf("%w (%w)", errInterrupted, context.Cause(ctx))
	}
	printError(stderr, err)
	return exitCode(err)
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "rpcbench <command>",
		Short: "Run the rpcbench scenarios and keep their evidence",
		Long: `rpcbench runs named scenarios, each against its own rpcserver process, and
prints one CASE line per scenario followed by "N passed, M failed", with
", F findings" and ", A n/a" when there are some. A verdict is PASS (every
check held), FINDING (the stack under test violated an invariant, as its
expectations file pins), N/A (the stack lacks what the configuration
needs), SKIP (this machine lacks a prerequisite), FAIL, ERROR (something
rpcbench drives broke its contract) or INTERRUPTED.

` + exitCodeHelp(),
		// Cobra prints neither errors nor usage: execute does, once.
		SilenceErrors:              true,
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2,
		// Runnable, so that a missing or unknown command reaches RunE
		// instead of cobra's own untyped error.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{err: errors.New("missing command"), choices: cmd.UsageString()}
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
			}
			return &usageError{err: errors.New(msg), choices: "valid commands: " + strings.Join(commandNames(cmd), ", ")}
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{err: err, choices: cmd.UsageString()}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.Server, "server", "", `rpcserver binary (default "rpcserver" next to the rpcbench executable)`)
	pf.Var(colorFlag{&a.Color}, "color", "colour the verdicts: auto (when stdout is a terminal and NO_COLOR is unset), always or never")
	_ = root.RegisterFlagCompletionFunc("color", cobra.FixedCompletions(report.ColorModes, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(newAllCmd(a), newRunCmd(a), newListCmd(a), newDiffCmd(a), newChaosCmd(a), newCallCmd(a), newConformCmd(a), newJudgeCmd(a), newTargetCmd(a), newProxyCmd(a), newMatrixCmd(a), newVersionCmd(a), newReportCmd(a), newScorecardCmd(a))
	root.SetHelpCommand(newHelpCmd(root))
	strictCompletion(root)
	// Defined first, so that cobra adds no -v shorthand: -v is run's and
	// all's --verbose.
	root.Flags().Bool("version", false, "print the version and exit")
	root.Version = report.Version()
	root.SetVersionTemplate("rpcbench {{.Version}}\n")
	return root
}

// commandNames lists the commands a user may type after rpcbench.
func commandNames(root *cobra.Command) []string {
	var out []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() || c.Name() == "help" {
			out = append(out, c.Name())
		}
	}
	return out
}

// usageArgs wraps an argument check so that its error is a usage error
// printed with the command's usage.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{err: err, choices: cmd.UsageString()}
		}
		return nil
	}
}

// colorFlag is the --color flag value.
type colorFlag struct{ m *report.ColorMode }

func (f colorFlag) String() string {
	if f.m == nil {
		return report.ColorAuto.String()
	}
	return f.m.String()
}

func (f colorFlag) Set(s string) error {
	m, err := report.ParseColorMode(s)
	if err != nil {
		return fmt.Errorf("want %s", strings.Join(report.ColorModes, ", "))
	}
	*f.m = m
	return nil
}

func (colorFlag) Type() string { return "when" }

// countFlag is the --count flag value: how many times to run the
// scenarios, at least 1.
type countFlag struct{ n *int }

func (f countFlag) String() string {
	if f.n == nil {
		return "1"
	}
	return strconv.Itoa(*f.n)
}

func (f countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxRuns {
		return fmt.Errorf("want a whole number from 1 to %d", maxRuns)
	}
	*f.n = n
	return nil
}

func (countFlag) Type() string { return "N" }

// completeGroups offers the group names and "all" for --group.
func completeGroups(a *app) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return append(a.Scenarios.Groups(), scenario.GroupAll), cobra.ShellCompDirectiveNoFileComp
	}
}

// closedPipe is stdout's writer: the first write that fails with EPIPE
// cancels the command's context, its cause a SIGPIPE signalError, so that
// a run whose reader has gone stops as if interrupted and exits 141.
type closedPipe struct {
	w      io.Writer
	cancel context.CancelCauseFunc
}

func (p *closedPipe) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.cancel(&signalError{syscall.SIGPIPE})
	}
	return n, err
}

// Fd lets report.UseColor see whether stdout is a terminal.
func (p *closedPipe) Fd() uintptr { return fdOf(p.w) }

// fdOf is w's file descriptor for a writer that stands in front of a file
// (closedPipe, progress), so that a terminal behind it is still seen; an
// impossible one for any other writer.
func fdOf(w io.Writer) uintptr {
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
