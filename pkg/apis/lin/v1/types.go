package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Installation is one clustered, stateful application: spec.shards independent
// StatefulSets of spec.replicas pods each, with its configuration files, a stable
// network identity for every pod and a generated list of peers.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=inst,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Shards",type=integer,JSONPath=`.spec.shards`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters, so that the names of its children and pods fit"
// +kubebuilder:validation:XValidation:rule="self.spec.shards * self.spec.replicas * (4 * size(self.metadata.name) + 311) + self.spec.shards * (2 * size(self.metadata.name) + 100) <= 1040000",message="spec.shards x spec.replicas are more pods than the peer list (the topology ConfigMap, at most 1 MiB) can name; with a name of n characters, shards x replicas x (4n + 311) + shards x (2n + 100) must be at most 1040000 (for 40 characters and 64 shards, 34 replicas)",fieldPath=".spec.replicas"
type Installation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the installation.
	// +required
	Spec InstallationSpec `json:"spec"`
	// Status is the state of the installation as the operator last observed it.
	// +optional
	Status InstallationStatus `json:"status,omitempty"`
}

// InstallationSpec is the desired state of an Installation.
//
// +kubebuilder:validation:XValidation:rule="has(self.storage) == has(oldSelf.storage)",message="spec.storage cannot be added or removed after creation"
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || self.storage.mountPath != self.configMountPath",message="spec.storage.mountPath must differ from spec.configMountPath"
// +kubebuilder:validation:XValidation:rule="self.service.type == 'NodePort' || self.service.type == 'LoadBalancer' || !has(self.ports) || self.ports.all(p, !has(p.nodePort))",message="spec.ports[].nodePort needs spec.service.type NodePort or LoadBalancer"
// +kubebuilder:validation:XValidation:rule="self.service.type == 'ClusterIP' || (has(self.ports) && size(self.ports) > 0)",message="spec.service.type NodePort or LoadBalancer needs spec.ports: with no ports there is no client Service"
type InstallationSpec struct {
	// Image is the application container image.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`
	// ImagePullPolicy is the pull policy of the application container, as in a Pod.
	// +optional
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// ImagePullSecrets name the Secrets used to pull the image, as in a Pod.
	// +optional
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Replicas is the number of pods in each shard; `kubectl scale` sets it.
	// shards x replicas is bounded by what the peer list can name (see
	// docs/operations.md): for a name of 40 characters, 64 x 34 or 8 x 275.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`
	// Shards is the number of shards, each one StatefulSet.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Shards *int32 `json:"shards,omitempty"`

	// Command is the entrypoint of the application container, as in a Container.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// Args are the arguments of the entrypoint, as in a Container.
	// +optional
	// +listType=atomic
	Args []string `json:"args,omitempty"`
	// Env is the environment of the application container, as in a Container.
	// POD_NAME, POD_NAMESPACE, INSTALLATION_NAME and INSTALLATION_SHARD are always set.
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`
	// EnvFrom fills the environment from ConfigMaps and Secrets, as in a Container.
	// +optional
	// +listType=atomic
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// Resources are the compute resources of the application container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// SecurityContext of the application container, as in a Container: in a
	// namespace that enforces Pod Security restricted, set
	// allowPrivilegeEscalation false and capabilities.drop [ALL] here.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// Lifecycle hooks of the application container, as in a Container: a
	// preStop hook can let a member leave its cluster before it stops.
	// +optional
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`
	// VolumeMounts of the application container, beside the operator's
	// own: mount spec.volumes here.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// InitContainers run in order before the application container, as in a
	// Pod; one with restartPolicy Always is a sidecar that starts first and
	// runs beside it.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.name != 'app')",message="spec.initContainers[].name must not be app, the application container's name"
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
	// Containers run beside the application container in every pod (a
	// metrics exporter, a backup agent). Their names must differ from those
	// of spec.initContainers: the API server refuses the pods otherwise, and
	// the Installation reports it as Degraded.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.name != 'app')",message="spec.containers[].name must not be app, the application container's name"
	Containers []corev1.Container `json:"containers,omitempty"`
	// Volumes added to every pod, beside the operator's own (config,
	// topology and data), for spec.volumeMounts and the extra containers.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(v, !(v.name in ['config', 'topology', 'data']))",message="spec.volumes[].name must not be config, topology or data: the operator's own volumes have those names"
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// Ports are exposed by the container, the headless Service and the client Service.
	// Names, and port numbers per protocol, are unique. With none there is no
	// client Service (one the operator made is deleted) and status.endpoint is
	// empty; the headless Service still gives each pod its DNS name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(q, q.containerPort == p.containerPort && q.protocol == p.protocol))",message="spec.ports: containerPort and protocol must be unique"
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(q, (has(q.servicePort) ? q.servicePort : q.containerPort) == (has(p.servicePort) ? p.servicePort : p.containerPort) && q.protocol == p.protocol))",message="spec.ports: servicePort (or containerPort where servicePort is unset) and protocol must be unique"
	Ports []InstallationPort `json:"ports,omitempty"`

	// Config holds the application's files, file name to content. They are
	// mounted read-only at configMountPath; editing them rolls the pods.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 253 && k.matches('^[-._a-zA-Z0-9]+$') && !k.startsWith('..') && k != '.')",message="spec.config keys must be valid ConfigMap keys: at most 253 characters of letters, digits, '-', '_' and '.', and not '.' or starting with '..'"
	Config map[string]string `json:"config,omitempty"`
	// ConfigMountPath is the folder where the config files are mounted.
	// +optional
	// +kubebuilder:default="/etc/installation"
	// +kubebuilder:validation:Pattern=`^/`
	// +kubebuilder:validation:MaxLength=1024
	ConfigMountPath string `json:"configMountPath,omitempty"`

	// Storage gives every pod a PersistentVolumeClaim. After creation, size
	// may grow (the operator raises every claim's request, where the
	// StorageClass allows expansion) and reclaimPolicy may change; the rest
	// is immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0",message="spec.storage.size may grow, never shrink"
	// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName) && self.accessModes == oldSelf.accessModes && self.mountPath == oldSelf.mountPath && has(self.labels) == has(oldSelf.labels) && (!has(self.labels) || self.labels == oldSelf.labels) && has(self.annotations) == has(oldSelf.annotations) && (!has(self.annotations) || self.annotations == oldSelf.annotations)",message="spec.storage is immutable after creation but for size, which may grow, and reclaimPolicy"
	Storage *StorageSpec `json:"storage,omitempty"`
	// Service configures the client Service, which exists only when spec.ports has one.
	// +optional
	// +kubebuilder:default={}
	Service ServiceSpec `json:"service,omitempty"`
	// HeadlessService adds labels and annotations to the headless Service.
	// +optional
	HeadlessService *ObjectLabels `json:"headlessService,omitempty"`
	// StatefulSets adds labels and annotations to every shard's StatefulSet.
	// +optional
	StatefulSets *ObjectLabels `json:"statefulSets,omitempty"`
	// Pod holds pod-level settings of every pod.
	// +optional
	Pod PodSettings `json:"pod,omitempty"`
	// Disruption configures the PodDisruptionBudget of each shard, which
	// keeps voluntary evictions (a node drain, say) from taking more than
	// maxUnavailable pods of one shard down at once.
	// +optional
	// +kubebuilder:default={}
	Disruption DisruptionSpec `json:"disruption,omitempty"`
	// Rollout says how a change that replaces pods (config, image, env,
	// resources...) reaches the shards.
	// +optional
	// +kubebuilder:default={}
	Rollout RolloutSpec `json:"rollout,omitempty"`

	// ReadinessProbe of the application container, as in a Container.
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`
	// LivenessProbe of the application container, as in a Container.
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
	// StartupProbe of the application container, as in a Container.
	// +optional
	StartupProbe *corev1.Probe `json:"startupProbe,omitempty"`

	// PodManagementPolicy of every shard's StatefulSet.
	// +optional
	// +kubebuilder:default=OrderedReady
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	PodManagementPolicy PodManagementPolicy `json:"podManagementPolicy,omitempty"`

	// Stop scales every shard to zero pods and keeps ConfigMaps, Services and PVCs.
	// +optional
	Stop bool `json:"stop,omitempty"`
	// Paused stops the operator from writing to the children; status says Paused.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// InstallationPort is one port of the application.
type InstallationPort struct {
	// Name is an IANA service name, unique among the ports.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self.matches('[a-z]')",message="spec.ports[].name must contain at least one letter"
	// +kubebuilder:validation:XValidation:rule="!self.contains('--')",message="spec.ports[].name must not contain '--'"
	Name string `json:"name"`
	// ContainerPort is the port the container listens on.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ContainerPort int32 `json:"containerPort"`
	// Protocol of the port.
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol corev1.Protocol `json:"protocol,omitempty"`
	// ServicePort is the port of both Services; it defaults to containerPort.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ServicePort int32 `json:"servicePort,omitempty"`
	// NodePort fixes the node port of the client Service, for spec.service.type
	// NodePort or LoadBalancer; unset, the API server picks one and the
	// operator keeps it. It must lie in the cluster's node port range.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePort int32 `json:"nodePort,omitempty"`
}

// ReclaimPolicy says what happens to a pod's PVC when its shard is removed or
// its Installation deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type ReclaimPolicy string

const (
	// ReclaimRetain keeps the PVCs.
	ReclaimRetain ReclaimPolicy = "Retain"
	// ReclaimDelete deletes the PVCs through the StatefulSet PVC retention policy.
	ReclaimDelete ReclaimPolicy = "Delete"
)

// StorageSpec gives every pod a PersistentVolumeClaim.
type StorageSpec struct {
	// Size is the requested size of each PVC.
	// +required
	Size resource.Quantity `json:"size"`
	// StorageClassName of the PVCs; empty uses the cluster's default class.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// AccessModes of the PVCs. ReadWriteOncePod cannot be combined with
	// another mode.
	// +optional
	// +listType=atomic
	// +kubebuilder:default={"ReadWriteOnce"}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:Enum=ReadWriteOnce;ReadOnlyMany;ReadWriteMany;ReadWriteOncePod
	// +kubebuilder:validation:XValidation:rule="!self.exists(m, m == 'ReadWriteOncePod') || size(self) == 1",message="spec.storage.accessModes: ReadWriteOncePod cannot be combined with another access mode"
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// MountPath is the folder where the volume is mounted.
	// +optional
	// +kubebuilder:default="/var/lib/installation"
	// +kubebuilder:validation:Pattern=`^/`
	// +kubebuilder:validation:MaxLength=1024
	MountPath string `json:"mountPath,omitempty"`
	// ReclaimPolicy says whether PVCs are kept (Retain) or deleted (Delete) when
	// their shard is removed or the Installation deleted.
	// +optional
	// +kubebuilder:default=Retain
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`
	// Labels added to every PVC, beside the operator's own: backup tools
	// select claims by label.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations added to every PVC.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ServiceSpec configures the client Service.
//
// +kubebuilder:validation:XValidation:rule="!has(self.externalTrafficPolicy) || self.type == 'NodePort' || self.type == 'LoadBalancer'",message="spec.service.externalTrafficPolicy needs spec.service.type NodePort or LoadBalancer"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerSourceRanges) || self.type == 'LoadBalancer'",message="spec.service.loadBalancerSourceRanges needs spec.service.type LoadBalancer"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerClass) || self.type == 'LoadBalancer'",message="spec.service.loadBalancerClass needs spec.service.type LoadBalancer"
// +kubebuilder:validation:XValidation:rule="has(self.loadBalancerClass) == has(oldSelf.loadBalancerClass) && (!has(self.loadBalancerClass) || self.loadBalancerClass == oldSelf.loadBalancerClass)",message="spec.service.loadBalancerClass is immutable: a Service's load balancer class cannot change"
type ServiceSpec struct {
	// Type of the client Service.
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	Type corev1.ServiceType `json:"type,omitempty"`
	// Annotations added to the client Service.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels added to the client Service.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// ExternalTrafficPolicy of a NodePort or LoadBalancer Service: Local keeps
	// the client's source address and sends traffic only to pods on the node.
	// +optional
	// +kubebuilder:validation:Enum=Cluster;Local
	ExternalTrafficPolicy corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
	// LoadBalancerSourceRanges limit the clients of a LoadBalancer Service to
	// these CIDRs, where the cloud provider supports it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(r, isCIDR(r))",message="spec.service.loadBalancerSourceRanges must be CIDRs, such as 10.0.0.0/8"
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
	// LoadBalancerClass picks the load balancer implementation of a
	// LoadBalancer Service. It cannot change once set.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`
}

// ObjectLabels are labels and annotations the operator adds to children of
// one kind, beside its own; keys removed here are removed from them.
type ObjectLabels struct {
	// Labels added to the objects.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations added to the objects.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// DisruptionSpec configures the PodDisruptionBudget of each shard.
type DisruptionSpec struct {
	// Enabled gives each shard a PodDisruptionBudget; false removes them, and
	// evictions are then limited by nothing but other budgets.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// MaxUnavailable is how many pods of a shard, a number or a percentage of
	// spec.replicas, evictions may take down at once. 0 refuses every
	// eviction, so a node drain waits until it is raised. Pods that are not
	// Ready may always be evicted: that takes nothing more down.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="spec.disruption.maxUnavailable must be a number of pods of at least 0 or a percentage from 0% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// RolloutStrategy says in what order the shards get a new pod template.
// +kubebuilder:validation:Enum=ShardByShard;AllShards
type RolloutStrategy string

const (
	// RolloutShardByShard gives shard k+1 the new template only once every
	// pod of shard k runs it and is Ready, so that at most one shard is
	// replacing pods at any moment.
	RolloutShardByShard RolloutStrategy = "ShardByShard"
	// RolloutAllShards gives every shard the new template at once.
	RolloutAllShards RolloutStrategy = "AllShards"
)

// RolloutSpec says how a change that replaces pods reaches the shards.
type RolloutSpec struct {
	// Strategy is ShardByShard (one shard at a time, in order) or AllShards.
	// +optional
	// +kubebuilder:default=ShardByShard
	Strategy RolloutStrategy `json:"strategy,omitempty"`
	// MaxUnavailable is how many pods of the rolling shard, a number or a
	// percentage of spec.replicas, may be replaced at once: the
	// StatefulSets' updateStrategy.rollingUpdate.maxUnavailable.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="spec.rollout.maxUnavailable must be a number of pods of at least 1 or a percentage from 1% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// ProgressDeadlineSeconds is how long a shard may take to run its new
	// pods Ready before the Installation reports Progressing=False with
	// reason RolloutStalled. The rollout then holds: the other shards keep
	// their pods until the spec is fixed.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
	// MinReadySeconds is how long a new pod must have been Ready before it
	// counts as available: the StatefulSets' minReadySeconds. A rollout
	// replaces the next pod of a shard, and moves on to the next shard,
	// only once the new pods are available. It is for an application whose
	// readiness says less than that its peers can reach the pod: a pod that
	// comes back has a new address, which the cluster's DNS gives out only
	// after the old record's time to live, so a quorum member restarted
	// right after it would leave the quorum short for that long.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
}

// PodSettings are pod-level settings applied to every pod.
type PodSettings struct {
	// Labels added to every pod.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations added to every pod.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// NodeSelector of every pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of every pod.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity of every pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// TopologySpreadConstraints of every pod.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// SecurityContext of every pod.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// ServiceAccountName the pods run as.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// PriorityClassName of every pod.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// TerminationGracePeriodSeconds of every pod.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// PodManagementPolicy is the pod management policy of every shard's StatefulSet.
type PodManagementPolicy string

const (
	// OrderedReadyPodManagement starts and stops pods one at a time, in order.
	OrderedReadyPodManagement PodManagementPolicy = "OrderedReady"
	// ParallelPodManagement starts and stops pods all at once.
	ParallelPodManagement PodManagementPolicy = "Parallel"
)

// Phase sums up an Installation's state in one word.
// +kubebuilder:validation:Enum=Pending;Progressing;Ready;Degraded;Stopped;Paused
type Phase string

const (
	// PhasePending means the children are being created and no pod is ready yet.
	PhasePending Phase = "Pending"
	// PhaseProgressing means a rollout or scaling is under way.
	PhaseProgressing Phase = "Progressing"
	// PhaseReady means every pod of every shard is ready and up to date.
	PhaseReady Phase = "Ready"
	// PhaseDegraded means the operator cannot reconcile the spec; a condition says why.
	PhaseDegraded Phase = "Degraded"
	// PhaseStopped means spec.stop is set and no pod runs.
	PhaseStopped Phase = "Stopped"
	// PhasePaused means spec.paused is set and the operator writes nothing to the children.
	PhasePaused Phase = "Paused"
)

// Condition types of an Installation.
const (
	// ConditionReady is True when every pod is ready and up to date.
	ConditionReady = "Ready"
	// ConditionProgressing is True while a rollout or scaling is under way.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the operator cannot reconcile the spec.
	ConditionDegraded = "Degraded"
)

// InstallationStatus is the state of an Installation as the operator last observed it.
type InstallationStatus struct {
	// ObservedGeneration is the generation of the spec that the rest of status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase sums up the state: Pending, Progressing, Ready, Degraded, Stopped or Paused.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// Replicas is the number of pods per shard now (that of the smallest shard).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Selector is the label selector of all pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// ReadyReplicas is the number of ready pods over all shards.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// UpdatedReplicas is the number of pods over all shards that run the current template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// Ready is readyReplicas over desired pods, like "6/6".
	// +optional
	Ready string `json:"ready,omitempty"`
	// Shards is the state of each shard.
	// +optional
	// +listType=map
	// +listMapKey=index
	Shards []ShardStatus `json:"shards,omitempty"`
	// Rollout is the shard whose pods are being made or replaced, while a
	// rollout (the first one included) is under way; absent otherwise.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// ConfigHash is the hash of spec.config that is rolled out.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// Endpoint is the DNS name of the client Service; empty when spec.ports
	// has none, for then there is no client Service.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Conditions are Ready, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolloutStatus is the shard a rollout is at.
type RolloutStatus struct {
	// Shard is the lowest shard whose pods are being made or replaced; the
	// shards after it that need new pods wait, under ShardByShard.
	Shard int32 `json:"shard"`
	// Since is when that shard began rolling to the current spec; the
	// progress deadline counts from it.
	Since metav1.Time `json:"since"`
}

// ShardStatus is the state of one shard.
type ShardStatus struct {
	// Index of the shard, from 0.
	Index int32 `json:"index"`
	// StatefulSetName is the name of the shard's StatefulSet.
	StatefulSetName string `json:"statefulSetName"`
	// Replicas is the number of pods the StatefulSet has.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of ready pods of the shard.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// UpdatedReplicas is the number of pods of the shard that run the current template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
}

// InstallationList is a list of Installations.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type InstallationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Installations.
	Items []Installation `json:"items"`
}
