package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// authority is a certificate authority a machine's bootstrap data carries.
type authority struct {
	cert   *x509.Certificate
	signer crypto.Signer
	pem    string
}

// loadAuthority reads the PEM certificate and key kubeadm would find in /etc/kubernetes/pki.
func loadAuthority(certPEM, keyPEM string) (*authority, error) {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("the certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the certificate does not parse: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("the certificate is not a certificate authority")
	}
	keyBlock, _ := pem.Decode([]byte(keyPEM))
	if keyBlock == nil {
		return nil, errors.New("the key is not PEM")
	}
	var key any
	switch keyBlock.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(keyBlock.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(keyBlock.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("the key does not parse: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("the key cannot sign")
	}
	if !publicKeysEqual(signer.Public(), cert.PublicKey) {
		return nil, errors.New("the key does not belong to the certificate")
	}
	return &authority{cert: cert, signer: signer, pem: certPEM}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	key, ok := a.(equaler)
	return ok && key.Equal(b)
}

// servingKey is the one key every issued certificate carries: generating a key per certificate
// would cost more than the rest of a boot.
var servingKey = func() *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return key
}()

// issue signs a certificate for names (host names or IP addresses).
func (a *authority) issue(commonName string, names []string, usages ...x509.ExtKeyUsage) (*tls.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     a.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
	}
	for _, name := range names {
		if ip := net.ParseIP(name); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, name)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, servingKey.Public(), a.signer)
	if err != nil {
		return nil, fmt.Errorf("signing a certificate for %s: %w", commonName, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: servingKey}, nil
}
