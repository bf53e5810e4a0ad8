package main

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// parse binds the flags with their defaults and parses args.
func parse(t *testing.T, args ...string) options {
	t.Helper()
	var o options
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	o.bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return o
}

func TestValidateNamesTheWrongFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// want is in the error; empty means no error.
		want string
	}{
		{name: "defaults"},
		{name: "leader election with its namespace", args: []string{"--leader-elect", "--leader-election-namespace=lin-system"}},
		{name: "leader election without a namespace", args: []string{"--leader-elect"},
			want: "--leader-election-namespace is required with --leader-elect"},
		{name: "bad lease name", args: []string{"--leader-elect", "--leader-election-namespace=ns", "--leader-election-id=Bad_Name"},
			want: `--leader-election-id "Bad_Name"`},
		{name: "lease not longer than renew deadline",
			args: []string{"--leader-elect", "--leader-election-namespace=ns", "--leader-election-lease-duration=10s"},
			want: "--leader-election-lease-duration (10s) must be longer than --leader-election-renew-deadline (10s)"},
		{name: "renew deadline within the retry period",
			args: []string{"--leader-elect", "--leader-election-namespace=ns", "--leader-election-retry-period=9s"},
			want: "--leader-election-renew-deadline (10s) must be longer than 1.2 times --leader-election-retry-period (9s)"},
		{name: "durations are not checked without election", args: []string{"--leader-election-retry-period=0"}},
		{name: "endpoints off", args: []string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}},
		{name: "endpoint on a host", args: []string{"--metrics-bind-address=127.0.0.1:9090"}},
		{name: "address without a port", args: []string{"--metrics-bind-address=localhost"},
			want: `--metrics-bind-address "localhost": want host:port`},
		{name: "port out of range", args: []string{"--health-probe-bind-address=:70000"},
			want: `--health-probe-bind-address ":70000": the port must be a number from 0 to 65535`},
		{name: "a certificate for plain HTTP", args: []string{"--metrics-secure=false", "--metrics-cert-dir=/certs"},
			want: "--metrics-cert-dir is for HTTPS: it cannot go with --metrics-secure=false"},
		{name: "same address twice", args: []string{"--metrics-bind-address=:9000", "--health-probe-bind-address=:9000"},
			want: "--metrics-bind-address and --health-probe-bind-address must differ"},
		{name: "cluster domain of 63 characters", args: []string{"--cluster-domain=" + strings.Repeat("d", 63)}},
		{name: "cluster domain too long for the peer list's bound", args: []string{"--cluster-domain=" + strings.Repeat("d", 60) + ".com"},
			want: "must be at most 63 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parse(t, tt.args...)
			err := o.validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("validate() = %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestOperatorConfig(t *testing.T) {
	o := parse(t, "--leader-elect", "--leader-election-namespace=lin-system", "--metrics-bind-address=0")
	cfg := o.operatorConfig()
	if cfg.MetricsAddress != "" || cfg.HealthAddress != ":8081" {
		t.Errorf("addresses = %q and %q, want metrics off and health on :8081", cfg.MetricsAddress, cfg.HealthAddress)
	}
	le := cfg.LeaderElection
	if le == nil || le.Namespace != "lin-system" || le.Name != "lin-operator" ||
		le.LeaseDuration != 15*time.Second || le.RenewDeadline != 10*time.Second || le.RetryPeriod != 2*time.Second {
		t.Errorf("leader election = %+v, want the Lease lin-system/lin-operator with 15s, 10s and 2s", le)
	}
	if parse(t).operatorConfig().LeaderElection != nil {
		t.Error("leader election is on without --leader-elect")
	}
	if def := parse(t).operatorConfig(); def.MetricsAddress != ":8443" || def.MetricsInsecure || def.MetricsCertDir != "" {
		t.Errorf("metrics = %q, secure %t, certificates from %q; want :8443 over HTTPS with a self-signed certificate",
			def.MetricsAddress, !def.MetricsInsecure, def.MetricsCertDir)
	}
	if cfg.Compression || !parse(t, "--kube-api-compression").operatorConfig().Compression {
		t.Error("compression is on by default, or off with --kube-api-compression")
	}
}
