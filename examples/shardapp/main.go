// Command shardapp is a small sharded, replicated key-value store written to
// show how an application runs under lin-operator: it learns its cluster
// from the topology.json that the operator mounts in every pod, and follows
// it when the Installation is scaled, with no restart. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", ":8080", "The address to serve on.")
	portName := flag.String("port-name", "http", "The name of the port, in topology.json, that the pods serve on.")
	topologyPath := flag.String("topology", "/etc/lin-topology/topology.json", "The topology file that the operator mounts.")
	dataDir := flag.String("data", "/var/lib/installation", "The folder of the pod's own volume.")
	reload := flag.Duration("reload-interval", time.Second, "How often to read the topology file again.")
	catchUp := flag.Duration("catch-up-interval", 2*time.Second, "How often to copy what this pod lacks from its shard's peers.")
	drain := flag.Duration("drain-delay", 3*time.Second, "How long to go on serving, not ready, after SIGTERM, while the Service stops sending requests here.")
	flag.Parse()
	if err := run(*listen, *portName, *topologyPath, *dataDir, *reload, *catchUp, *drain); err != nil {
		log.Fatal(err)
	}
}

// run serves until SIGTERM or SIGINT.
func run(listen, portName, topologyPath, dataDir string, reload, catchUp, drain time.Duration) error {
	pod := os.Getenv("POD_NAME")
	shard, err := strconv.Atoi(os.Getenv("INSTALLATION_SHARD"))
	if pod == "" || err != nil {
		return errors.New("POD_NAME and INSTALLATION_SHARD must be set, as lin-operator sets them in every pod")
	}
	topo, err := loadTopology(topologyPath)
	if err != nil {
		return err
	}
	store, err := OpenStore(filepath.Join(dataDir, "shardapp"))
	if err != nil {
		return err
	}
	defer store.Close()
	s := &Server{store: store, topology: topo, pod: pod, shard: shard, portName: portName, client: newClient()}
	srv := &http.Server{Addr: listen, Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go topo.watch(reload, ctx.Done())
	// Peers can send writes from the moment the server listens; the
	// catch-up then brings what they took while this pod was away, and
	// only then does the pod take clients.
	s.catchUp(ctx)
	s.ready.Store(true)
	log.Printf("%s of shard %d ready with %d entries", pod, shard, len(store.All()))
	go func() {
		tick := time.NewTicker(catchUp)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.catchUp(ctx)
			}
		}
	}()

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	s.stopping.Store(true)
	log.Printf("stopping: not ready, serving for %v more", drain)
	time.Sleep(drain)
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
