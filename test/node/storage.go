package node

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"lin.dev/lin-operator/test/env"
)

const (
	// storageNamespace holds the provisioner's helper pods and the
	// ConfigMap they take their scripts from.
	storageNamespace = "local-path-storage"
	// provisionerName is the provisioner's name in the StorageClass.
	provisionerName = "rancher.io/local-path"
)

// volumesDir is the node's folder under which each claim gets its own.
var volumesDir = filepath.Join(stateDir, "volumes")

// helperPod is the template of the pods in which the provisioner makes and
// removes a claim's folder, as busybox (BusyboxImage) with the scripts below.
const helperPod = `apiVersion: v1
kind: Pod
metadata:
  name: helper-pod
spec:
  priorityClassName: system-node-critical
  containers:
    - name: helper-pod
      image: ` + BusyboxImage + `
      imagePullPolicy: Never
`

// storageConfig is what the provisioner reads from its ConfigMap: where the
// folders go, and the scripts of its helper pods.
var storageConfig = map[string]string{
	"setup":          "#!/bin/sh\nset -eu\nmkdir -m 0777 -p \"$VOL_DIR\"\n",
	"teardown":       "#!/bin/sh\nset -eu\nrm -rf \"$VOL_DIR\"\n",
	"helperPod.yaml": helperPod,
}

// startStorage makes the default StorageClass (env.StorageClass) and runs
// local-path-provisioner, which binds its claims to folders of the node,
// made and removed by its helper pods.
func (c *Cluster) startStorage(ctx context.Context) error {
	nodePaths, err := json.Marshal(map[string]any{"nodePathMap": []map[string]any{
		{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": []string{volumesDir}},
	}})
	if err != nil {
		return err
	}
	data := map[string]string{"config.json": string(nodePaths)}
	for k, v := range storageConfig {
		data[k] = v
	}
	objects := []struct {
		what   string
		create func() error
	}{
		{"namespace", func() error {
			_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: storageNamespace}}, metav1.CreateOptions{})
			return err
		}},
		{"ServiceAccount", func() error {
			_, err := c.Client.CoreV1().ServiceAccounts(storageNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "local-path-provisioner"}}, metav1.CreateOptions{})
			return err
		}},
		{"ConfigMap", func() error {
			_, err := c.Client.CoreV1().ConfigMaps(storageNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "local-path-config"}, Data: data}, metav1.CreateOptions{})
			return err
		}},
		{"StorageClass", func() error {
			_, err := c.Client.StorageV1().StorageClasses().Create(ctx, env.DefaultStorageClass(provisionerName, storagev1.VolumeBindingWaitForFirstConsumer), metav1.CreateOptions{})
			return err
		}},
	}
	for _, o := range objects {
		if err := o.create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the storage provisioner's %s: %w", o.what, err)
		}
	}
	_, err = c.Run("local-path-provisioner", filepath.Join(c.BinDir, "local-path-provisioner"), "start",
		"--kubeconfig", c.KubeconfigPath,
		"--namespace", storageNamespace,
		"--configmap-name", "local-path-config",
		"--service-account-name", "local-path-provisioner",
		"--provisioner-name", provisionerName,
		"--helper-image", BusyboxImage,
	)
	return err
}
