package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// aksServerApp is the Entra application whose tokens AKS's API servers take (the scope kubelogin
// and CAPZ ask for is `6dae42f8-.../.default`).
const aksServerApp = "6dae42f8-4368-4678-94ff-3960e28e3630"

const (
	// How long a tenant's signing keys are trusted as the whole set: a token naming another key
	// has them read again, no sooner than this after the last reading.
	keysRefetchAfter = 5 * time.Second
	// How many verified tokens are remembered; past that the memory starts over.
	verifiedCapacity = 4096
)

// Why a request is refused: fixed phrases, so that each is logged once per cluster, and never the
// token itself.
const (
	refusedNoBearer  = "no bearer token in the Authorization header"
	refusedMalformed = "the bearer token is not a JWT the emulator signs (ES256)"
	refusedNoKeys    = "the tenant's signing keys cannot be read from the emulator"
	refusedSignature = "the bearer token's signature does not verify with the tenant's signing keys"
	refusedExpired   = "the bearer token has expired (or has no exp)"
	refusedAudience  = "the bearer token is not for AKS's Entra server application " + aksServerApp
	refusedTenant    = "the bearer token is from another tenant than the cluster's"
)

// unauthorized is kube-apiserver's answer to a request it cannot authenticate.
var unauthorized = []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n")

func writeUnauthorized(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write(unauthorized)
}

// entraSignIn checks the bearer tokens an AKS API server with Entra integration and no local
// accounts takes: access tokens the emulator's Entra ID signed, for AKS's server application.
type entraSignIn struct {
	emulator *emulator
	now      func() time.Time

	keysMu sync.Mutex
	keys   map[string]*tenantKeys // by tenant, lower case

	verifiedMu sync.Mutex
	verified   map[string]*tokenClaims // by tenant and token
}

// tenantKeys is a tenant's JWKS as last read: the P-256 keys by kid, or why it could not be read.
type tenantKeys struct {
	byKid   map[string]*ecdsa.PublicKey
	err     error
	fetched time.Time
}

// tokenClaims are the claims the check reads.
type tokenClaims struct {
	Audience audiences `json:"aud"`
	Expiry   *float64  `json:"exp"`
	Tenant   string    `json:"tid"`
}

// audiences is `aud`: one string or a list of them.
type audiences []string

func (a *audiences) UnmarshalJSON(data []byte) error {
	var one string
	if json.Unmarshal(data, &one) == nil {
		*a = audiences{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(data, &many); err != nil {
		return err
	}
	*a = many
	return nil
}

func newEntraSignIn(e *emulator) *entraSignIn {
	return &entraSignIn{
		emulator: e,
		now:      time.Now,
		keys:     map[string]*tenantKeys{},
		verified: map[string]*tokenClaims{},
	}
}

// check gives why a request with this Authorization header is refused by a cluster of tenant
// (any, when empty), or "" when it is signed in.
func (v *entraSignIn) check(tenant, authorization string) string {
	scheme, token, found := strings.Cut(strings.TrimSpace(authorization), " ")
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return refusedNoBearer
	}
	claims, why := v.verify(tenant, token)
	if why != "" {
		return why
	}
	if claims.Expiry == nil || int64(*claims.Expiry) <= v.now().Unix() {
		return refusedExpired
	}
	forAKS := false
	for _, audience := range claims.Audience {
		forAKS = forAKS || isAKSServerApp(audience)
	}
	if !forAKS {
		return refusedAudience
	}
	if tenant != "" && !strings.EqualFold(claims.Tenant, tenant) {
		return refusedTenant
	}
	return ""
}

// isAKSServerApp tells whether an audience names AKS's server application: the emulator puts the
// resource of the scope asked for in `aud` as it was written, so `api://` and a trailing slash
// may come along.
func isAKSServerApp(audience string) bool {
	audience = strings.TrimSuffix(audience, "/")
	if len(audience) > len("api://") && strings.EqualFold(audience[:len("api://")], "api://") {
		audience = audience[len("api://"):]
	}
	return strings.EqualFold(audience, aksServerApp)
}

// verify reads a token and checks its signature, once per token: clients send the same token for
// as long as it lives, and an ECDSA check costs more than most answers. Expiry, audience and
// tenant are left to the caller, to be checked on every request.
func (v *entraSignIn) verify(tenant, token string) (*tokenClaims, string) {
	key := strings.ToLower(tenant) + " " + token
	v.verifiedMu.Lock()
	claims, ok := v.verified[key]
	v.verifiedMu.Unlock()
	if ok {
		return claims, ""
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, refusedMalformed
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	claims = &tokenClaims{}
	signature, err := decodePart(parts[2])
	if err != nil || jsonPart(parts[0], &header) != nil || jsonPart(parts[1], claims) != nil ||
		header.Alg != "ES256" || len(signature) != 64 {
		return nil, refusedMalformed
	}
	keys, err := v.signingKeys(tenant, header.Kid)
	if err != nil {
		return nil, refusedNoKeys
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(signature[:32]), new(big.Int).SetBytes(signature[32:])
	verified := false
	for kid, public := range keys {
		if header.Kid == "" || kid == header.Kid {
			verified = verified || ecdsa.Verify(public, digest[:], r, s)
		}
	}
	if !verified {
		return nil, refusedSignature
	}
	v.verifiedMu.Lock()
	if len(v.verified) >= verifiedCapacity {
		clear(v.verified)
	}
	v.verified[key] = claims
	v.verifiedMu.Unlock()
	return claims, ""
}

// signingKeys is the tenant's JWKS, read again when it lacks kid (the emulator restarted with a
// new key) and was not read just now; a failed reading is not retried sooner either, so that an
// emulator in trouble is not asked on every request.
func (v *entraSignIn) signingKeys(tenant, kid string) (map[string]*ecdsa.PublicKey, error) {
	v.keysMu.Lock()
	defer v.keysMu.Unlock()
	name := strings.ToLower(tenant)
	known := v.keys[name]
	if known != nil {
		_, has := known.byKid[kid]
		if has || (kid == "" && len(known.byKid) > 0) || v.now().Sub(known.fetched) < keysRefetchAfter {
			return known.byKid, known.err
		}
	}
	fetched, err := v.fetchKeys(tenant)
	if err != nil {
		logger.Error(err, "reading the emulator's signing keys", "tenant", tenant)
		if known != nil && len(known.byKid) > 0 {
			known.fetched = v.now()
			return known.byKid, nil
		}
		v.keys[name] = &tenantKeys{fetched: v.now(), err: err}
		return nil, err
	}
	if known != nil && !sameKeys(known.byKid, fetched) {
		// Tokens of keys that are gone must verify again.
		v.verifiedMu.Lock()
		clear(v.verified)
		v.verifiedMu.Unlock()
	}
	v.keys[name] = &tenantKeys{byKid: fetched, fetched: v.now()}
	return fetched, nil
}

// fetchKeys reads the JWKS the emulator publishes for the tenant, keeping its P-256 keys.
func (v *entraSignIn) fetchKeys(tenant string) (map[string]*ecdsa.PublicKey, error) {
	if tenant == "" {
		tenant = "common"
	}
	var jwks struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := v.emulator.do(ctx, http.MethodGet, "/"+url.PathEscape(tenant)+"/discovery/v2.0/keys", nil, &jwks); err != nil {
		return nil, err
	}
	keys := map[string]*ecdsa.PublicKey{}
	for _, jwk := range jwks.Keys {
		if jwk.Kty != "EC" || jwk.Crv != "P-256" {
			continue
		}
		x, errX := decodePart(jwk.X)
		y, errY := decodePart(jwk.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			continue
		}
		public, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			continue
		}
		keys[jwk.Kid] = public
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS holds no P-256 key")
	}
	return keys, nil
}

func sameKeys(a, b map[string]*ecdsa.PublicKey) bool {
	if len(a) != len(b) {
		return false
	}
	for kid, key := range a {
		if other, ok := b[kid]; !ok || !key.Equal(other) {
			return false
		}
	}
	return true
}

// decodePart decodes base64url, with or without padding.
func decodePart(part string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
}

func jsonPart(part string, into any) error {
	data, err := decodePart(part)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}
