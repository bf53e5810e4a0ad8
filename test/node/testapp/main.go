// Command testapp is the small server that the real-node tests run in pods:
// it answers on HTTP with what only a real container can show, such as the
// files of its volumes and what the cluster's DNS says from inside a pod.
//
//	GET  /healthz             200 "ok"
//	GET  /file?path=P         the content of the file P
//	PUT  /file?path=P         writes the body to P (its folder must exist)
//	GET  /lookup?name=N       the addresses that N resolves to, one a line
//	GET  /get?url=U           the status and body of a GET of U
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	listen := flag.String("listen", ":8080", "The address to serve on.")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("GET /file", func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Write(data)
	})
	mux.HandleFunc("PUT /file", func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err == nil {
			err = os.WriteFile(r.URL.Query().Get("path"), data, 0o644)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("GET /lookup", func(w http.ResponseWriter, r *http.Request) {
		addrs, err := net.DefaultResolver.LookupHost(r.Context(), r.URL.Query().Get("name"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprint(w, strings.Join(addrs, "\n"))
	})
	client := &http.Client{Timeout: 5 * time.Second}
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		resp, err := client.Get(r.URL.Query().Get("url"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		fmt.Fprintf(w, "%d\n", resp.StatusCode)
		io.Copy(w, io.LimitReader(resp.Body, 64<<10))
	})
	log.Fatal(http.ListenAndServe(*listen, mux))
}
