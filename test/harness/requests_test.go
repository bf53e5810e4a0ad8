package harness

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRequestKeyNamesVerbAndResourceAsTheAPIServerDoes(t *testing.T) {
	for _, tc := range []struct {
		method, url, want string
	}{
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps?watch=true", "watch configmaps"},
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps", "list configmaps"},
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps/demo", "get configmaps"},
		{http.MethodPost, "/apis/apps/v1/namespaces/ns/statefulsets", "create statefulsets"},
		{http.MethodPost, "/apis/apps/v1/namespaces/ns/statefulsets?dryRun=All", "dryrun-create statefulsets"},
		{http.MethodPut, "/apis/lin.dev/v1/namespaces/ns/installations/demo/status", "update installations/status"},
		{http.MethodPatch, "/api/v1/namespaces/ns/events/e1", "patch events"},
		{http.MethodDelete, "/apis/apps/v1/namespaces/ns/statefulsets/demo-1", "delete statefulsets"},
		{http.MethodGet, "/apis/lin.dev/v1/installations", "list installations"},
	} {
		if got := RequestKey(httptest.NewRequest(tc.method, tc.url, nil)); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}

func TestRequestCounterCountsConflictsApart(t *testing.T) {
	c := NewRequestCounter()
	status := http.StatusOK
	rt := c.Wrap(RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: status}, nil
	}))
	put := httptest.NewRequest(http.MethodPut, "/apis/lin.dev/v1/namespaces/ns/installations/demo/status", nil)
	for _, s := range []int{http.StatusOK, http.StatusConflict} {
		status = s
		if _, err := rt.RoundTrip(put); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Snapshot()["update installations/status"]; got != 2 {
		t.Errorf("counted %d status updates, want 2", got)
	}
	if got := c.Conflicts()["update installations/status"]; got != 1 {
		t.Errorf("counted %d conflicts, want 1", got)
	}
}
