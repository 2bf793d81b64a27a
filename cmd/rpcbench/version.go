package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/report"
)

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the module version, the commit and the Go version of this build",
		Example: "  rpcbench version\n  rpcbench --version",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(a.Out, "rpcbench "+report.Version())
			return err
		},
	}
}

// newHelpCmd replaces cobra's help command, which prints the usage and
// exits 0 for a topic it does not know: here that is a usage error.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(_ *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return usageErrorf("valid commands: "+strings.Join(commandNames(root), ", "), "no help topic %q", strings.Join(args, " "))
			}
			return cmd.Help()
		},
	}
}

// strictCompletion makes 'completion SHELL' with an unknown shell a usage
// error naming the shells, instead of cobra's help and exit 0.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, s := range c.Commands() {
			shells = append(shells, s.Name())
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("valid shells: "+strings.Join(shells, ", "), "unknown shell %q", args[0])
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("valid shells: "+strings.Join(shells, ", "), "completion needs a shell")
		}
		c.Example = "  source <(rpcbench completion bash)\n  rpcbench completion zsh > \"${fpath[1]}/_rpcbench\""
	}
}
