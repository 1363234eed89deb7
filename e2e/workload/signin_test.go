package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

const testTenant = "aaaaaaaa-0000-0000-0000-00000000000a"

// entraEmulator stands for the emulator's Entra ID: it publishes one signing key for testTenant
// over TLS, and signs tokens with it.
type entraEmulator struct {
	key     *ecdsa.PrivateKey
	kid     string
	fetches atomic.Int32
	server  *httptest.Server
}

func newEntraEmulator(t *testing.T) *entraEmulator {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e := &entraEmulator{key: key, kid: "key-1"}
	e.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+testTenant+"/discovery/v2.0/keys" {
			http.Error(w, `{"error":"invalid_tenant"}`, http.StatusBadRequest)
			return
		}
		e.fetches.Add(1)
		point, err := e.key.PublicKey.Bytes()
		if err != nil {
			t.Error(err)
		}
		encode := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "EC", "kid": e.kid, "use": "sig", "alg": "ES256", "crv": "P-256",
			"x": encode(point[1:33]), "y": encode(point[33:]),
		}}})
	}))
	t.Cleanup(e.server.Close)
	return e
}

// sign makes a compact ES256 JWT of claims with key, naming kid.
func sign(t *testing.T, key *ecdsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	encode := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(data)
	}
	input := encode(map[string]string{"typ": "JWT", "alg": "ES256", "kid": kid}) + "." + encode(claims)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	signature := make([]byte, 64)
	r.FillBytes(signature[:32])
	s.FillBytes(signature[32:])
	return input + "." + base64.RawURLEncoding.EncodeToString(signature)
}

// claims are those the emulator puts in a token for AKS's server application, valid for an hour.
func claims() map[string]any {
	return map[string]any{
		"aud": aksServerApp,
		"iss": "https://sts.windows.net/" + testTenant + "/",
		"exp": time.Now().Add(time.Hour).Unix(),
		"tid": testTenant,
		"oid": "o",
	}
}

// aksSimulator is a simulator serving one AKS cluster on port 1443 that takes only Entra tokens,
// and one on port 2443 with local accounts.
func aksSimulator(t *testing.T, e *entraEmulator) *simulator {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	manager := inmemoryruntime.NewManager(scheme)
	s := newSimulator(manager, &emulator{base: e.server.URL, http: e.server.Client()}, logr.Discard(), time.Minute, 0)
	for port, entraOnly := range map[string]bool{"1443": true, "2443": false} {
		group := "aks-" + port
		manager.AddResourceGroup(group)
		s.byPort[port] = &workloadCluster{
			name: group, group: group, managed: true, present: true,
			entraOnly: entraOnly, tenant: testTenant,
		}
	}
	return s
}

// get lists namespaces at the cluster on port, with this Authorization header if not empty.
func get(s *simulator, port int, authorization string) *httptest.ResponseRecorder {
	request := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces", nil)
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	request = request.WithContext(context.WithValue(request.Context(), http.LocalAddrContextKey, local))
	if authorization != "" {
		request.Header.Set("Authorization", authorization)
	}
	answer := httptest.NewRecorder()
	s.handler.ServeHTTP(answer, request)
	return answer
}

func TestEntraTokensForAKSAreAccepted(t *testing.T) {
	e := newEntraEmulator(t)
	s := aksSimulator(t, e)
	token := sign(t, e.key, e.kid, claims())
	for range 3 {
		if answer := get(s, 1443, "Bearer "+token); answer.Code != http.StatusOK {
			t.Fatalf("a valid token: %d %s", answer.Code, answer.Body)
		}
	}
	if n := e.fetches.Load(); n != 1 {
		t.Errorf("the JWKS was read %d times, want once", n)
	}
	if n := len(s.signIn.verified); n != 1 {
		t.Errorf("%d verified tokens remembered, want 1", n)
	}
	// The emulator echoes the resource as the scope named it.
	for _, audience := range []any{"api://" + aksServerApp, aksServerApp + "/", []string{"other", strings.ToUpper(aksServerApp)}} {
		c := claims()
		c["aud"] = audience
		if answer := get(s, 1443, "bearer "+sign(t, e.key, e.kid, c)); answer.Code != http.StatusOK {
			t.Errorf("audience %v: %d %s", audience, answer.Code, answer.Body)
		}
	}
}

func TestRequestsWithoutAValidEntraTokenAreUnauthorized(t *testing.T) {
	e := newEntraEmulator(t)
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	with := func(change func(map[string]any)) string {
		c := claims()
		change(c)
		return "Bearer " + sign(t, e.key, e.kid, c)
	}
	valid := sign(t, e.key, e.kid, claims())
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"aud":"`+aksServerApp+`","exp":9999999999,"tid":"`+testTenant+`"}`)) + "." + parts[2]
	for name, test := range map[string]struct{ authorization, why string }{
		"missing header":        {"", refusedNoBearer},
		"another scheme":        {"Basic dXNlcjpwYXNz", refusedNoBearer},
		"not a JWT":             {"Bearer abc.def", refusedMalformed},
		"wrong audience":        {with(func(c map[string]any) { c["aud"] = "https://management.azure.com/" }), refusedAudience},
		"another app's api URI": {with(func(c map[string]any) { c["aud"] = "api://" + aksServerApp + "-x" }), refusedAudience},
		"expired":               {with(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Second).Unix() }), refusedExpired},
		"no expiry":             {with(func(c map[string]any) { delete(c, "exp") }), refusedExpired},
		"another tenant":        {with(func(c map[string]any) { c["tid"] = "bbbbbbbb-0000-0000-0000-00000000000b" }), refusedTenant},
		"bad signature":         {"Bearer " + sign(t, other, e.kid, claims()), refusedSignature},
		"tampered claims":       {"Bearer " + tampered, refusedSignature},
	} {
		t.Run(name, func(t *testing.T) {
			s := aksSimulator(t, e)
			answer := get(s, 1443, test.authorization)
			if answer.Code != http.StatusUnauthorized {
				t.Fatalf("%d %s, want 401", answer.Code, answer.Body)
			}
			if got := answer.Body.String(); got != string(unauthorized) || answer.Header().Get("Content-Type") != "application/json" {
				t.Errorf("body %q", got)
			}
			var status map[string]any
			if err := json.Unmarshal(answer.Body.Bytes(), &status); err != nil || status["kind"] != "Status" ||
				status["reason"] != "Unauthorized" || status["code"] != float64(401) {
				t.Errorf("not a Status: %v %v", status, err)
			}
			// The reason is the one expected, and logged the first time only.
			if s.byPort["1443"].refused(test.why) {
				t.Errorf("the refusal was not for %q: %v", test.why, s.byPort["1443"].refusals)
			}
		})
	}
}

func TestExpiryIsCheckedOnEveryRequest(t *testing.T) {
	e := newEntraEmulator(t)
	s := aksSimulator(t, e)
	token := "Bearer " + sign(t, e.key, e.kid, claims())
	if answer := get(s, 1443, token); answer.Code != http.StatusOK {
		t.Fatalf("%d %s", answer.Code, answer.Body)
	}
	s.signIn.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if answer := get(s, 1443, token); answer.Code != http.StatusUnauthorized {
		t.Fatalf("a remembered token past its expiry: %d", answer.Code)
	}
}

func TestClustersWithLocalAccountsStayOpen(t *testing.T) {
	e := newEntraEmulator(t)
	s := aksSimulator(t, e)
	for _, authorization := range []string{"", "Bearer not-a-token"} {
		if answer := get(s, 2443, authorization); answer.Code != http.StatusOK {
			t.Errorf("%q: %d %s", authorization, answer.Code, answer.Body)
		}
	}
	if n := e.fetches.Load(); n != 0 {
		t.Errorf("the JWKS was read %d times for a cluster that checks no token", n)
	}
}

func TestKeysAreReadAgainForANewKey(t *testing.T) {
	e := newEntraEmulator(t)
	s := aksSimulator(t, e)
	if answer := get(s, 1443, "Bearer "+sign(t, e.key, e.kid, claims())); answer.Code != http.StatusOK {
		t.Fatalf("%d %s", answer.Code, answer.Body)
	}
	// The emulator restarted with another key.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	old := e.key
	e.key, e.kid = key, "key-2"
	fresh := "Bearer " + sign(t, e.key, e.kid, claims())
	if answer := get(s, 1443, fresh); answer.Code != http.StatusUnauthorized {
		t.Fatalf("a key unknown just after a reading: %d", answer.Code)
	}
	s.signIn.now = func() time.Time { return time.Now().Add(keysRefetchAfter) }
	if answer := get(s, 1443, fresh); answer.Code != http.StatusOK {
		t.Fatalf("a new key: %d %s", answer.Code, answer.Body)
	}
	if answer := get(s, 1443, "Bearer "+sign(t, old, "key-1", claims())); answer.Code != http.StatusUnauthorized {
		t.Fatalf("a token of a key that is gone: %d", answer.Code)
	}
}
