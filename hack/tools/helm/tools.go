//go:build tools

// Package tools pins helm, whose real binary the chart's tests run (lint,
// template, install, upgrade, uninstall); hack/build-tools.sh builds it from
// this module.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
