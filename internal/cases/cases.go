package cases

import (
	"slices"

	"github.com/rpcbench/rpcbench/internal/cases/chaos"
	"github.com/rpcbench/rpcbench/internal/cases/deploy"
	"github.com/rpcbench/rpcbench/internal/cases/durability"
	"github.com/rpcbench/rpcbench/internal/cases/evidence"
	"github.com/rpcbench/rpcbench/internal/cases/governance"
	"github.com/rpcbench/rpcbench/internal/cases/grpc"
	"github.com/rpcbench/rpcbench/internal/cases/hostile"
	"github.com/rpcbench/rpcbench/internal/cases/network"
	"github.com/rpcbench/rpcbench/internal/cases/robustness"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// The groups' names, in run order: each is its package's Group.
const (
	GroupEvidence   = evidence.Group
	GroupRobustness = robustness.Group
	GroupHostile    = hostile.Group
	GroupDurability = durability.Group
	GroupChaos      = chaos.Group
	GroupGovernance = governance.Group
	GroupNetwork    = network.Group
	GroupGRPC       = grpc.Group
	GroupProxy      = grpc.ProxyGroup
	GroupDeploy     = deploy.Group
)

// Default returns every scenario, in run order: the groups in the order
// above, each group's scenarios in the order its Cases lists them.
func Default() scenario.Registry {
	return slices.Concat(evidence.Cases(), robustness.Cases(), hostile.Cases(), durability.Cases(), chaos.Cases(), governance.Cases(), network.Cases(), grpc.Cases(), grpc.ProxyCases(), deploy.Cases())
}
