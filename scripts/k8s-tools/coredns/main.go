// Command coredns is CoreDNS with only the plugins the test environment's
// cluster DNS needs (scripts/testenv.d/k8s/coredns.sh): CoreDNS's own main
// links every plugin, the cloud providers' SDKs (route53, azure, clouddns)
// and etcd's client among them, which the build would compile for nothing.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/template"
)

// The order is CoreDNS's own (core/dnsserver/zdirectives.go) but for health,
// moved after kubernetes: startup callbacks run in this order, and
// kubernetes's blocks until its API cache has synced, so health answers only
// once the cluster's names can be served, which is what the start function
// waits for.
func init() {
	dnsserver.Directives = []string{
		"bind",
		"errors",
		"log",
		"kubernetes",
		"health",
		"template",
	}
}

func main() { coremain.Run() }
