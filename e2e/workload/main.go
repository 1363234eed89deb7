// Command workload-simulator runs the insides of the ARM emulator's machines: what cloud-init
// and kubeadm would do on each VM or scale-set instance that boots with Cluster API bootstrap
// data. The first control-plane machine of a cluster brings up its API server (Cluster API's
// in-memory API server and etcd, serving with the cluster's own CAs) behind the cluster's
// control plane endpoint, which the emulator's proxy routes to it; every machine registers its
// Node. See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/emicklei/go-restful/v3"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

var logger logr.Logger

func main() {
	emulatorURL := flag.String("emulator", "", "the ARM emulator's base URL (https://127.0.0.1:PORT)")
	emulatorCA := flag.String("emulator-ca", "", "the PEM file of the CA the emulator serves with")
	listen := flag.String("listen", "127.0.0.1:0", "where to serve the status endpoint (GET /status); its URL is printed on the first line of standard output")
	interval := flag.Duration("interval", 250*time.Millisecond, "how often to read the emulator's machines")
	joinTimeout := flag.Duration("join-timeout", 5*time.Minute, "how long a joining machine waits for its control plane and bootstrap token before it fails for good, as kubeadm's discovery does")
	statusReport := flag.Duration("node-status-report-frequency", 5*time.Minute, "how often a running kubelet posts its node's status when nothing changed, as the kubelet's nodeStatusReportFrequency (0: never)")
	verbose := flag.Bool("v", false, "log the API server's requests too")
	flag.Parse()
	// The in-memory API server writes through go-restful, which indents JSON by default. A real
	// API server writes each watch event on one line, and clients that split the stream by lines
	// (kube-rs) read nothing else.
	restful.PrettyPrintResponses = false
	level := slog.LevelInfo
	if *verbose {
		level = slog.Level(-4)
	}
	logger = logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctrl.SetLogger(logger)
	if *emulatorURL == "" {
		fmt.Fprintln(os.Stderr, "workload-simulator: --emulator is required: the base URL the ARM emulator printed")
		os.Exit(2)
	}
	if err := run(*emulatorURL, *emulatorCA, *listen, *interval, *joinTimeout, *statusReport); err != nil {
		fmt.Fprintln(os.Stderr, "workload-simulator:", err)
		os.Exit(1)
	}
}

func run(emulatorURL, emulatorCA, listen string, interval, joinTimeout, statusReport time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = ctrl.LoggerInto(ctx, logger)

	emulator, err := newEmulator(emulatorURL, emulatorCA)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	manager := inmemoryruntime.NewManager(scheme)
	if err := manager.Start(ctx); err != nil {
		return fmt.Errorf("starting the object store: %w", err)
	}
	simulator := newSimulator(manager, emulator, logger.WithName("api"), joinTimeout, statusReport)

	listener, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(simulator.status())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	status := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = status.Serve(listener) }()
	fmt.Printf("http://%s\n", listener.Addr())

	simulator.run(ctx, interval)
	return status.Close()
}
