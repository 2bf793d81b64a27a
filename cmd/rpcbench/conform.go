package main

import "github.com/spf13/cobra"

// newConformCmd is rpcbench conform (issue 15); a helper writes it.
func newConformCmd(a *app) *cobra.Command {
	return &cobra.Command{Use: "conform", Short: "Check a server against SPEC.md (not yet written)", Hidden: true}
}
