package env

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// This file holds the faults a reliability test injects into a running
// control plane: a restart of kube-apiserver and a compaction of etcd's
// history.

// Restart says how RestartAPIServer restarts kube-apiserver.
type Restart struct {
	// Kill stops it with SIGKILL, as a crash would; otherwise it gets
	// SIGTERM and shuts down gracefully, as in a rolling upgrade, with
	// SIGKILL after Options.StopTimeout.
	Kill bool
	// Down is how long it stays stopped before it starts again.
	Down time.Duration
}

// RestartAPIServer stops kube-apiserver and starts it again with the same
// flags, on the same port and the same etcd, and returns once it answers
// /readyz. Config, Client and the kubeconfig stay valid: the apiserver reuses
// the serving certificate it wrote in its cert folder. The other programs are
// left running, so they see the apiserver go away and come back.
func (e *Env) RestartAPIServer(ctx context.Context, r Restart) error {
	procs := e.processes("kube-apiserver")
	if len(procs) != 1 {
		return fmt.Errorf("found %d kube-apiservers, want 1", len(procs))
	}
	old := procs[0]
	if r.Kill {
		killGroup(old.Pid, syscall.SIGKILL)
		<-old.done
	} else if err := old.stop(e.opts.StopTimeout); err != nil {
		return err
	}
	select {
	case <-time.After(r.Down):
	case <-ctx.Done():
		return ctx.Err()
	}
	p, err := startProcess(old.Name, old.Path, old.cmd.Args[1:], old.LogPath, e.opts.Detach)
	if err != nil {
		return err
	}
	e.replaceProcess(old, p)
	if err := e.recordProcesses(); err != nil {
		return fmt.Errorf("recording the restarted kube-apiserver: %w", err)
	}
	return e.waitFor(ctx, "kube-apiserver /readyz after a restart", []*process{p}, func(ctx context.Context) (bool, error) {
		body, err := e.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && strings.TrimSpace(string(body)) == "ok", err
	})
}

// replaceProcess puts p in the place of old among the started programs, so
// that Stop stops the new one.
func (e *Env) replaceProcess(old, p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.procs {
		if e.procs[i] == old {
			e.procs[i] = p
		}
	}
}

// EtcdEndpoint returns the URL of etcd's client endpoint.
func (e *Env) EtcdEndpoint() string { return e.etcdURL }

// EtcdRevision returns etcd's current revision: the resourceVersion of the
// latest write to any object.
func (e *Env) EtcdRevision(ctx context.Context) (int64, error) {
	var out struct {
		Header struct {
			// The JSON gateway writes 64-bit integers as strings.
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// A read of the key "\x00", which never exists, returns just the header.
	if err := e.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": "AA=="}, &out); err != nil {
		return 0, err
	}
	return strconv.ParseInt(out.Header.Revision, 10, 64)
}

// CompactEtcd discards etcd's history before its current revision and waits
// until the compaction is applied on disk. Afterwards a watch or a list at
// an older resourceVersion that reaches etcd fails with "resource version too
// old" (410 Gone). It returns the revision compacted at; compacting again at
// the same revision is not an error.
func (e *Env) CompactEtcd(ctx context.Context) (int64, error) {
	rev, err := e.EtcdRevision(ctx)
	if err != nil {
		return 0, err
	}
	err = e.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": rev, "physical": true}, nil)
	if err != nil && !strings.Contains(err.Error(), "required revision has been compacted") {
		return 0, err
	}
	return rev, nil
}

// etcdCall posts req as JSON to one of etcd's gRPC gateway paths and decodes
// the answer into out, if not nil.
func (e *Env) etcdCall(ctx context.Context, path string, req, out any) error {
	if e.etcdURL == "" {
		return errors.New("etcd is not running")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.etcdURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}
