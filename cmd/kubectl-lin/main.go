// Command kubectl-lin is the kubectl plugin of lin-operator: with the binary
// on PATH, `kubectl lin status NAME` shows an Installation whole, `kubectl
// lin list` sums up each, `kubectl lin restart NAME` rolls its pods through
// the operator, `kubectl lin pause|resume|stop|start NAME` change the spec
// fields that day-2 chores need, `kubectl lin report NAME` writes a support
// bundle and `kubectl lin version` names the versions. It takes kubectl's
// usual flags (--kubeconfig, --context, --namespace, ...).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/plugin"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := newRoot(streams).Execute(); err != nil {
		fmt.Fprintln(streams.ErrOut, "error:", err)
		os.Exit(1)
	}
}

// options are the flags every command shares.
type options struct {
	config  *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	// timeout bounds a whole command, all its requests together.
	timeout time.Duration
}

// newRoot makes the kubectl-lin command and its subcommands.
func newRoot(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:           "kubectl-lin",
		Short:         "See and run the Installations of lin-operator",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.config.AddFlags(root.PersistentFlags())
	root.PersistentFlags().DurationVar(&o.timeout, "timeout", 30*time.Second, "How long a command may take in all before it gives up.")
	root.AddCommand(o.statusCommand(), o.listCommand(), o.restartCommand(), o.reportCommand(), o.versionCommand())
	for _, c := range []struct {
		use, short string
		change     plugin.SpecChange
	}{
		{"pause NAME", "Stop the operator from writing to the Installation's children (spec.paused: true)", plugin.Pause},
		{"resume NAME", "Let the operator reconcile the Installation again (spec.paused: false)", plugin.Resume},
		{"stop NAME", "Scale every shard to zero pods, keeping the claims (spec.stop: true)", plugin.Stop},
		{"start NAME", "Bring a stopped Installation's pods back (spec.stop: false)", plugin.Start},
	} {
		root.AddCommand(o.specCommand(c.use, c.short, c.change))
	}
	return root
}

// clients makes the clients from kubectl's flags, and the namespace to use.
func (o *options) clients() (plugin.Clients, string, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return plugin.Clients{}, "", err
	}
	cfg.UserAgent = plugin.FieldManager
	// Each request within the whole command's bound, discovery's too,
	// unless --request-timeout sets one of its own.
	if cfg.Timeout == 0 {
		cfg.Timeout = o.timeout
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return plugin.Clients{}, "", err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return plugin.Clients{}, "", err
	}
	lin, err := versioned.NewForConfig(cfg)
	if err != nil {
		return plugin.Clients{}, "", err
	}
	return plugin.Clients{Kube: kube, Lin: lin}, ns, nil
}

// run makes the clients from kubectl's flags and calls fn with them, the
// namespace to use and a context that --timeout bounds.
func (o *options) run(cmd *cobra.Command, fn func(ctx context.Context, cl plugin.Clients, ns string) error) error {
	cl, ns, err := o.clients()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	return fn(ctx, cl, ns)
}

// say writes msg, a line for the user, unless err is set.
func (o *options) say(msg string, err error) error {
	if err == nil {
		fmt.Fprintln(o.streams.Out, msg)
	}
	return err
}

// colored reports whether to colour: on a terminal, unless NO_COLOR is set.
func (o *options) colored() bool {
	f, ok := o.streams.Out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == ""
}

// statusCommand is `kubectl lin status NAME`.
func (o *options) statusCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show an Installation whole: phase, conditions, rollout, shards and pods, budgets, Services, events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output %q: want json or yaml, or none for the screen", output)
			}
			return o.run(cmd, func(ctx context.Context, cl plugin.Clients, ns string) error {
				snap, err := plugin.Gather(ctx, cl, ns, args[0])
				if err != nil {
					return err
				}
				switch output {
				case "json":
					return json.NewEncoder(o.streams.Out).Encode(snap)
				case "yaml":
					data, err := yaml.Marshal(snap)
					if err != nil {
						return err
					}
					_, err = o.streams.Out.Write(data)
					return err
				}
				return plugin.RenderStatus(o.streams.Out, snap, time.Now(), o.colored())
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml: the Installation and its children as read, for tools.")
	return cmd
}

// listCommand is `kubectl lin list`.
func (o *options) listCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the Installations with a line on the health of each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, func(ctx context.Context, cl plugin.Clients, ns string) error {
				if all {
					ns = ""
				}
				insts, err := plugin.List(ctx, cl, ns)
				if err != nil {
					return err
				}
				return plugin.RenderList(o.streams.Out, insts, time.Now(), all, o.colored())
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List the Installations of every namespace.")
	return cmd
}

// specCommand changes one spec field of the Installation NAME.
func (o *options) specCommand(use, short string, change plugin.SpecChange) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, func(ctx context.Context, cl plugin.Clients, ns string) error {
				return o.say(change.Apply(ctx, cl, ns, args[0]))
			})
		},
	}
}

// restartCommand is `kubectl lin restart NAME [--shard N]`.
func (o *options) restartCommand() *cobra.Command {
	var shard int32
	cmd := &cobra.Command{
		Use:   "restart NAME",
		Short: "Restart the pods of every shard, or of one, rolling them as the rollout strategy and the budgets allow; no pod is deleted",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var only *int32
			if cmd.Flags().Changed("shard") {
				only = &shard
			}
			return o.run(cmd, func(ctx context.Context, cl plugin.Clients, ns string) error {
				return o.say(plugin.Restart(ctx, cl, ns, args[0], only, time.Now()))
			})
		},
	}
	cmd.Flags().Int32Var(&shard, "shard", 0, "Restart this shard alone.")
	return cmd
}

// reportCommand is `kubectl lin report NAME`: a support bundle.
func (o *options) reportCommand() *cobra.Command {
	var operatorNS, operatorSelector, file string
	cmd := &cobra.Command{
		Use:   "report NAME",
		Short: "Write a support bundle (tar.gz): the Installation, its children and events, the operator's pods and logs, the versions; never a Secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, func(ctx context.Context, cl plugin.Clients, ns string) error {
				now := time.Now()
				if file == "" {
					file = fmt.Sprintf("lin-report-%s-%s-%s.tar.gz", ns, args[0], now.UTC().Format("20060102T150405Z"))
				}
				r := plugin.Report{Namespace: ns, Name: args[0], OperatorNamespace: operatorNS, OperatorSelector: operatorSelector,
					PluginVersion: buildVersion(), Now: now}
				return o.say("wrote "+file, writeReport(ctx, cl, r, file))
			})
		},
	}
	cmd.Flags().StringVar(&operatorNS, "operator-namespace", "",
		"The operator's namespace (lin-system for deploy/): its Deployment, pods and recent logs go in the bundle too.")
	cmd.Flags().StringVar(&operatorSelector, "operator-selector", plugin.OperatorSelector,
		"Label selector of the operator's Deployment and pods in --operator-namespace (a chart with nameOverride labels them so).")
	cmd.Flags().StringVarP(&file, "file", "f", "", "Where to write the bundle; it must not exist. Default: lin-report-<namespace>-<name>-<time>.tar.gz here.")
	return cmd
}

// writeReport writes r's bundle to a new file, which it removes on an error.
func writeReport(ctx context.Context, cl plugin.Clients, r plugin.Report, file string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := r.Write(ctx, cl, f); err != nil {
		f.Close()
		os.Remove(file)
		return err
	}
	return f.Close()
}

// versionCommand is `kubectl lin version`: the plugin's and the cluster's.
func (o *options) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and the cluster's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(o.streams.Out, "kubectl-lin: %s\n", buildVersion())
			cl, _, err := o.clients()
			if err != nil {
				return err
			}
			server, err := cl.Kube.Discovery().ServerVersion()
			if err != nil {
				return fmt.Errorf("reading the cluster's version: %w", err)
			}
			fmt.Fprintf(o.streams.Out, "cluster: %s\n", server.GitVersion)
			return nil
		},
	}
}

// version is the release's version, stamped by make plugin
// (-X main.version=vX.Y.Z); empty in other builds.
var version string

// buildVersion is the release's version, or else the module's version and
// the commit the binary was built from, as the Go toolchain records them.
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			v += " (" + s.Value + ")"
		}
	}
	return v
}
