// Command pause is the sandbox container of the real node's pods, as
// registry.k8s.io/pause is elsewhere: it holds the pod's namespaces, reaps
// the orphans of a pod that shares its process namespace, and exits on
// SIGINT or SIGTERM. test/node packs it into the image that containerd pins.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
