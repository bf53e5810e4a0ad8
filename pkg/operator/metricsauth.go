package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authorizationcel "k8s.io/apiserver/pkg/authorization/cel"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"lin.dev/lin-operator/pkg/metrics"
)

// How long the answers of the reviews are kept, as kube-rbac-proxy and
// controller-runtime's metrics filter keep them: Prometheus scrapes every
// 30 s with the same token, so most scrapes cost no review, while a revoked
// token or role stops working within minutes, and a denied caller that is
// granted the role is let in soon.
const (
	tokenCacheTTL = time.Minute
	allowCacheTTL = 5 * time.Minute
	denyCacheTTL  = 30 * time.Second
	// reviewTimeout bounds one TokenReview.
	reviewTimeout = 10 * time.Second
)

// reviewBackoff retries a review that failed (the API server's timeouts,
// 429s). It is k8s.io/apiserver's options.DefaultAuthWebhookRetryBackoff,
// copied as controller-runtime's metrics filter copies it: that package
// would bring the whole of the API server's options.
func reviewBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// reviewsHint says what lets the operator ask for reviews, for the log of
// a review that it may not ask for, or that the API server could not answer.
const reviewsHint = "the operator's ServiceAccount needs create on tokenreviews and subjectaccessreviews " +
	"(the ClusterRole system:auth-delegator grants both), or run with --metrics-secure=false"

// checkReviewAccess logs an error, once at start, when RBAC does not let
// the operator ask for the reviews that authorized needs: every scrape
// would then be refused, and the log says so where it is read first. The
// namespace-scoped install ships without that grant, which is
// cluster-scoped.
func checkReviewAccess(ctx context.Context, client kubernetes.Interface) {
	for _, res := range []authorizationv1.ResourceAttributes{
		{Group: authenticationv1.GroupName, Resource: "tokenreviews", Verb: "create"},
		{Group: authorizationv1.GroupName, Resource: "subjectaccessreviews", Verb: "create"},
	} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &res}}
		got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		switch {
		case err != nil:
			klog.ErrorS(err, "Cannot check the access that /metrics needs", "resource", res.Resource)
		case !got.Status.Allowed:
			klog.ErrorS(nil, "The operator may not review scrapes: /metrics refuses every one", "resource", res.Resource,
				"verb", res.Verb, "hint", reviewsHint)
		}
	}
}

// authorized lets a request through to next only when a TokenReview
// authenticates its bearer token and a SubjectAccessReview allows that user
// the request's verb on its path (a non-resource URL, such as get on
// /metrics). It answers 401 without a token the API server accepts, and 403
// to a user whom RBAC does not allow. It takes k8s.io/apiserver's delegating
// authenticator and authorizer, which an aggregated API server and
// kube-rbac-proxy use for the same job, with their caches.
func authorized(next http.Handler, reviews kubernetes.Interface) (http.Handler, error) {
	authn, authz, err := delegating(reviews)
	if err != nil {
		return nil, err
	}
	// The reviews are bounded as the scrapes are: each new token costs a
	// TokenReview, so without a bound a flood of made-up tokens would queue
	// reviews without end, and Prometheus' own behind them.
	inFlight := make(chan struct{}, metrics.MaxScrapesInFlight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case inFlight <- struct{}{}:
			defer func() { <-inFlight }()
		default:
			http.Error(w, fmt.Sprintf("more than %d scrapes at once", metrics.MaxScrapesInFlight), http.StatusServiceUnavailable)
			return
		}
		if allow(w, r, authn, authz) {
			next.ServeHTTP(w, r)
		}
	}), nil
}

// delegating returns k8s.io/apiserver's delegating authenticator and
// authorizer, which send TokenReviews and SubjectAccessReviews through
// reviews and cache their answers.
func delegating(reviews kubernetes.Interface) (authenticator.Request, authorizer.Authorizer, error) {
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                 tokenCacheTTL,
		TokenAccessReviewClient:  reviews.AuthenticationV1(),
		TokenAccessReviewTimeout: reviewTimeout,
		WebhookRetryBackoff:      reviewBackoff(),
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("making the metrics authenticator: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: reviews.AuthorizationV1(),
		Compiler:                  noConditions{},
		AllowCacheTTL:             allowCacheTTL,
		DenyCacheTTL:              denyCacheTTL,
		WebhookRetryBackoff:       reviewBackoff(),
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("making the metrics authorizer: %w", err)
	}
	return authn, authz, nil
}

// allow reports whether the request's bearer token is authenticated and its
// user allowed the request's verb on its path, and otherwise answers it.
func allow(w http.ResponseWriter, r *http.Request, authn authenticator.Request, authz authorizer.Authorizer) bool {
	// A token that the review refuses comes back as an error that says
	// why (expired, not issued here); either way the answer is 401, as the
	// API server's own. The log says why at -v=2: at the default level,
	// anyone could fill it with bad tokens. A review that fails (RBAC, the
	// API server) is logged as an error by the authenticator.
	res, ok, err := authn.AuthenticateRequest(r)
	if err != nil || !ok {
		klog.V(2).InfoS("Scrape not authenticated", "path", r.URL.Path, "err", err)
		http.Error(w, "Unauthorized: a bearer token that the API server accepts is required", http.StatusUnauthorized)
		return false
	}
	attrs := authorizer.AttributesRecord{User: res.User, Verb: strings.ToLower(r.Method), Path: r.URL.Path}
	decision, reason, err := authz.Authorize(r.Context(), attrs)
	if err != nil {
		klog.ErrorS(err, "Reviewing a scrape's access failed", "user", res.User.GetName(), "hint", reviewsHint)
		http.Error(w, "the access could not be reviewed", http.StatusInternalServerError)
		return false
	}
	if decision != authorizer.DecisionAllow {
		klog.V(2).InfoS("Scrape denied", "user", res.User.GetName(), "path", r.URL.Path, "reason", reason)
		http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s", res.User.GetName(), attrs.Verb, r.URL.Path),
			http.StatusForbidden)
		return false
	}
	return true
}

// noConditions is the CEL compiler of an authorizer with no match
// conditions, which never compiles anything. The default compiler builds
// CEL's Kubernetes environment when the authorizer is made, which costs the
// process megabytes for expressions that a delegating authorizer never has.
type noConditions struct{}

// CompileCELExpression implements authorizationcel.Compiler.
func (noConditions) CompileCELExpression(authorizationcel.ExpressionAccessor) (authorizationcel.CompilationResult, error) {
	return authorizationcel.CompilationResult{}, errors.New("the metrics authorizer has no match conditions")
}
