package clientconf

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// buildTLS converts ssl.* for SSL and SASL_SSL (Kafka's
// DefaultSslEngineFactory, PEM stores only).
func (b *builder) buildTLS() error {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	var desc []string
	if v, ok := b.get("ssl.enabled.protocols"); ok {
		lo, hi := uint16(0), uint16(0)
		for _, p := range ParseList(v) {
			var ver uint16
			switch strings.ToUpper(p) {
			case "TLSV1.3":
				ver = tls.VersionTLS13
			case "TLSV1.2":
				ver = tls.VersionTLS12
			case "TLSV1.1":
				ver = tls.VersionTLS11
			case "TLSV1":
				ver = tls.VersionTLS10
			default:
				return b.errf("ssl.enabled.protocols", v, "unknown protocol %q (want TLSv1.2, TLSv1.3)", p)
			}
			if lo == 0 || ver < lo {
				lo = ver
			}
			if ver > hi {
				hi = ver
			}
		}
		if lo != 0 {
			cfg.MinVersion, cfg.MaxVersion = lo, hi
			if lo < tls.VersionTLS12 {
				b.warn("ssl.enabled.protocols", "TLS versions before 1.2 are insecure")
			}
		}
		b.line("ssl.enabled.protocols", v, fmt.Sprintf("TLS versions %s to %s", tls.VersionName(cfg.MinVersion), tls.VersionName(cfg.MaxVersion)))
	}
	if v, ok := b.get("ssl.protocol"); ok {
		switch strings.ToUpper(v) {
		case "TLS", "TLSV1.2", "TLSV1.3", "TLSV1.1", "TLSV1", "SSL", "SSLV3":
			b.line("ssl.protocol", v, "no effect: ssl.enabled.protocols selects versions (default TLSv1.2, TLSv1.3)")
		default:
			return b.errf("ssl.protocol", v, "unknown protocol")
		}
	}

	roots, trust, err := b.truststore()
	if err != nil {
		return err
	}
	cfg.RootCAs = roots
	desc = append(desc, "trust="+trust)

	cert, ident, err := b.keystore()
	if err != nil {
		return err
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
		desc = append(desc, "client certificate="+ident)
	}

	algo, set := b.get("ssl.endpoint.identification.algorithm")
	switch {
	case set && algo == "":
		// Kafka: an empty algorithm disables hostname verification only;
		// the chain is still verified against the trust store.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyChainOnly(roots)
		desc = append(desc, "hostname verification=off (chain verified)")
		b.line("ssl.endpoint.identification.algorithm", "", "hostname verification off, certificate chain still verified")
	case set && !strings.EqualFold(algo, "https"):
		return b.errf("ssl.endpoint.identification.algorithm", algo, "must be https or empty")
	default:
		desc = append(desc, "hostname verification=on")
		if set {
			b.line("ssl.endpoint.identification.algorithm", algo, "hostname verification on")
		}
	}
	b.out.Conn.TLS = cfg
	b.out.Conn.TLSSummary = strings.Join(desc, ", ")
	return nil
}

// verifyChainOnly verifies the peer's chain against roots (nil: the system
// pool) without checking the host name.
func verifyChainOnly(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("clientconf: broker sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

const jksTrustAdvice = "kmirror reads PEM stores only. Convert the store, then set ssl.truststore.type=PEM and ssl.truststore.location=truststore.pem: " +
	"keytool -importkeystore -srckeystore <store> -srcstoretype %[1]s -destkeystore truststore.p12 -deststoretype PKCS12 && " +
	"openssl pkcs12 -in truststore.p12 -nokeys -out truststore.pem"

const jksKeyAdvice = "kmirror reads PEM stores only. Convert the store, then set ssl.keystore.type=PEM and ssl.keystore.location=keystore.pem " +
	"(with ssl.key.password if you keep the key encrypted): " +
	"keytool -importkeystore -srckeystore <store> -srcstoretype %[1]s -destkeystore keystore.p12 -deststoretype PKCS12 && " +
	"openssl pkcs12 -in keystore.p12 -nodes -out keystore.pem " +
	"(or, to keep the key encrypted: openssl pkcs12 -in keystore.p12 -nocerts -nodes | openssl pkcs8 -topk8 -v2 aes-256-cbc -out key.pem, and openssl pkcs12 -in keystore.p12 -nokeys -out chain.pem, then ssl.keystore.key/ssl.keystore.certificate.chain)"

// storeType returns the upper-cased store type and whether it was set.
func (b *builder) storeType(key string) (string, bool) {
	v, ok := b.get(key)
	if !ok || v == "" {
		return "JKS", false
	}
	return strings.ToUpper(v), true
}

func (b *builder) truststore() (*x509.CertPool, string, error) {
	typ, typSet := b.storeType("ssl.truststore.type")
	inline, hasInline := b.get("ssl.truststore.certificates")
	loc, hasLoc := b.get("ssl.truststore.location")
	if _, ok := b.s["ssl.truststore.password"]; ok {
		b.line("ssl.truststore.password", b.s["ssl.truststore.password"], "no effect: PEM trust stores have no password")
	}
	if hasInline && inline != "" {
		if typSet && typ != "PEM" {
			return nil, "", b.errf("ssl.truststore.type", typ, "ssl.truststore.certificates needs ssl.truststore.type=PEM")
		}
		if hasLoc && loc != "" {
			return nil, "", b.errf("ssl.truststore.location", loc, "set either ssl.truststore.location or ssl.truststore.certificates, not both")
		}
		pool, n, err := certPool(inline)
		if err != nil {
			return nil, "", b.errf("ssl.truststore.certificates", "", "%v", err)
		}
		b.line("ssl.truststore.certificates", inline, fmt.Sprintf("%d trusted certificate(s)", n))
		return pool, fmt.Sprintf("inline PEM (%d certificates)", n), nil
	}
	if !hasLoc || loc == "" {
		if typSet {
			b.line("ssl.truststore.type", typ, "no effect without ssl.truststore.location")
		}
		return nil, "system roots", nil
	}
	data, err := b.env.ReadFile(loc)
	if err != nil {
		return nil, "", b.errf("ssl.truststore.location", loc, "cannot read the trust store: %v", fileErr(err))
	}
	if typ != "PEM" {
		if !typSet && looksPEM(data) {
			b.warn("ssl.truststore.type", "ssl.truststore.type is not set, so Kafka reads the file as JKS and fails; the file is PEM, which kmirror reads: set ssl.truststore.type=PEM")
		} else {
			return nil, "", b.errf("ssl.truststore.type", typ, jksTrustAdvice, typ)
		}
	}
	pool, n, err := certPool(string(data))
	if err != nil {
		return nil, "", b.errf("ssl.truststore.location", loc, "%v", err)
	}
	b.line("ssl.truststore.location", loc, fmt.Sprintf("%d trusted certificate(s)", n))
	return pool, fmt.Sprintf("PEM file %s (%d certificates)", loc, n), nil
}

func (b *builder) keystore() (*tls.Certificate, string, error) {
	typ, typSet := b.storeType("ssl.keystore.type")
	key, hasKey := b.get("ssl.keystore.key")
	chain, hasChain := b.get("ssl.keystore.certificate.chain")
	loc, hasLoc := b.get("ssl.keystore.location")
	keyPass, hasKeyPass := b.s["ssl.key.password"]
	if _, ok := b.s["ssl.keystore.password"]; ok {
		b.line("ssl.keystore.password", b.s["ssl.keystore.password"], "no effect: PEM keys are decrypted with ssl.key.password")
	}
	var pemText, src string
	switch {
	case hasKey && key != "":
		if typSet && typ != "PEM" {
			return nil, "", b.errf("ssl.keystore.type", typ, "ssl.keystore.key needs ssl.keystore.type=PEM")
		}
		if !hasChain || chain == "" {
			return nil, "", b.errf("ssl.keystore.certificate.chain", "", "required with ssl.keystore.key")
		}
		pemText, src = key+"\n"+chain, "inline PEM"
		b.line("ssl.keystore.key", key, "client private key")
		b.line("ssl.keystore.certificate.chain", chain, "client certificate chain")
	case hasLoc && loc != "":
		data, err := b.env.ReadFile(loc)
		if err != nil {
			// A path is not a secret (the file's contents are): name it and
			// the OS error so the operator can fix it.
			return nil, "", b.errf("ssl.keystore.location", "", "cannot read the key store %q: %v", loc, fileErr(err))
		}
		if typ != "PEM" {
			if !typSet && looksPEM(data) {
				b.warn("ssl.keystore.type", "ssl.keystore.type is not set, so Kafka reads the file as JKS and fails; the file is PEM, which kmirror reads: set ssl.keystore.type=PEM")
			} else {
				return nil, "", b.errf("ssl.keystore.type", typ, jksKeyAdvice, typ)
			}
		}
		pemText, src = string(data), "PEM file (ssl.keystore.location)"
		b.line("ssl.keystore.location", loc, "client key and certificate chain")
	default:
		if hasChain && chain != "" {
			return nil, "", b.errf("ssl.keystore.key", "", "required with ssl.keystore.certificate.chain")
		}
		return nil, "", nil
	}
	cert, err := keyPair(pemText, strings.TrimSpace(keyPass), hasKeyPass)
	if err != nil {
		k := "ssl.keystore.key"
		if src != "inline PEM" {
			k = "ssl.keystore.location"
		}
		return nil, "", b.errf(k, "", "%v", err)
	}
	if hasKeyPass {
		b.line("ssl.key.password", keyPass, "decrypts the client private key")
	}
	return cert, src, nil
}

// fileErr returns the cause of a file error without repeating the path.
func fileErr(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

func looksPEM(b []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(b), []byte("-----BEGIN "))
}

type pemBlock struct {
	Type  string
	Bytes []byte
}

// parsePEM reads PEM blocks leniently: Kafka's inline PEM values usually
// lose their line breaks to properties line continuations, so whitespace
// anywhere inside the base64 body is ignored. Legacy encrypted PEM
// (Proc-Type headers) is rejected.
func parsePEM(s string) ([]pemBlock, error) {
	var out []pemBlock
	for {
		i := strings.Index(s, "-----BEGIN ")
		if i < 0 {
			break
		}
		s = s[i+len("-----BEGIN "):]
		j := strings.Index(s, "-----")
		if j < 0 {
			return nil, errors.New("unterminated PEM header")
		}
		label := s[:j]
		s = s[j+5:]
		if !validPEMLabel(label) || strings.HasPrefix(s, "-") {
			// The text up to the next five dashes is not a label: the BEGIN
			// line lost or gained a dash, and what was read as the label may
			// be the base64 of a private key. Never quote it.
			return nil, errors.New(malformedBEGIN)
		}
		end := "-----END " + label + "-----"
		k := strings.Index(s, end)
		if k < 0 {
			return nil, fmt.Errorf("PEM block %q has no END line", label)
		}
		body := s[:k]
		s = s[k+len(end):]
		if strings.Contains(body, ":") {
			return nil, fmt.Errorf("PEM block %q has headers (legacy encryption is not supported; use PKCS#8: openssl pkcs8 -topk8 -v2 aes-256-cbc)", label)
		}
		clean := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' {
				return -1
			}
			return r
		}, body)
		der, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return nil, fmt.Errorf("PEM block %q is not valid base64", label)
		}
		out = append(out, pemBlock{Type: label, Bytes: der})
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM block found")
	}
	return out, nil
}

// malformedBEGIN is parsePEM's error for a BEGIN line whose label cannot be
// read; it quotes nothing from the input, which may be key material.
const malformedBEGIN = "malformed PEM BEGIN line: it must be -----BEGIN <LABEL>----- with exactly five dashes on each side, e.g. -----BEGIN PRIVATE KEY-----"

// validPEMLabel reports whether label can be a PEM label (RFC 7468's labels
// as OpenSSL and Kafka write them: upper-case letters, digits and single
// spaces, at most 64 characters). Only a valid label may appear in an error.
func validPEMLabel(label string) bool {
	if label == "" || len(label) > 64 || label[0] == ' ' || label[len(label)-1] == ' ' || strings.Contains(label, "  ") {
		return false
	}
	for _, r := range label {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ' ') {
			return false
		}
	}
	return true
}

func certPool(s string) (*x509.CertPool, int, error) {
	blocks, err := parsePEM(s)
	if err != nil {
		return nil, 0, err
	}
	pool := x509.NewCertPool()
	n := 0
	for _, bl := range blocks {
		if bl.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(bl.Bytes)
		if err != nil {
			return nil, 0, fmt.Errorf("certificate %d: %v", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, 0, errors.New("no CERTIFICATE block found")
	}
	return pool, n, nil
}

// keyPair builds a client certificate from PEM text holding one private
// key (PKCS#8, encrypted PKCS#8, PKCS#1 or SEC 1) and the certificate
// chain, leaf first.
func keyPair(s, password string, hasPassword bool) (*tls.Certificate, error) {
	blocks, err := parsePEM(s)
	if err != nil {
		return nil, err
	}
	var certs [][]byte
	var key any
	for _, bl := range blocks {
		switch bl.Type {
		case "CERTIFICATE":
			certs = append(certs, bl.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			if !hasPassword {
				return nil, errors.New("the private key is encrypted: set ssl.key.password")
			}
			der, err := decryptPKCS8(bl.Bytes, password)
			if err != nil {
				return nil, err
			}
			if key, err = x509.ParsePKCS8PrivateKey(der); err != nil {
				return nil, errors.New("decrypted private key is not valid PKCS#8 (wrong ssl.key.password?)")
			}
		case "PRIVATE KEY":
			if key, err = x509.ParsePKCS8PrivateKey(bl.Bytes); err != nil {
				return nil, errors.New("private key is not valid PKCS#8")
			}
		case "RSA PRIVATE KEY":
			if key, err = x509.ParsePKCS1PrivateKey(bl.Bytes); err != nil {
				return nil, errors.New("RSA private key is not valid PKCS#1")
			}
		case "EC PRIVATE KEY":
			if key, err = x509.ParseECPrivateKey(bl.Bytes); err != nil {
				return nil, errors.New("EC private key is not valid")
			}
		}
	}
	if key == nil {
		return nil, errors.New("no private key found")
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate found")
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	var certPEM []byte
	for _, c := range certs {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
	}
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return nil, errors.New("the private key does not match the first certificate of the chain")
	}
	return &pair, nil
}

// OIDs of PKCS#5 v2 (RFC 8018) and the ciphers OpenSSL uses for
// "openssl pkcs8 -topk8 -v2 ...".
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type encryptedPrivateKeyInfo struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF pkix.AlgorithmIdentifier
	Enc pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt      []byte
	Iter      int
	KeyLength int                      `asn1:"optional"`
	PRF       pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo protected with PBES2
// (PBKDF2 + AES-CBC or 3DES-CBC), the format Kafka's PEM key stores use.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("encrypted private key is not valid PKCS#8")
	}
	if !info.Algo.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted private key uses %v; only PBES2 is supported (openssl pkcs8 -topk8 -v2 aes-256-cbc)", info.Algo.Algorithm)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(info.Algo.Parameters.FullBytes, &p); err != nil {
		return nil, errors.New("invalid PBES2 parameters")
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, errors.New("only PBKDF2 key derivation is supported")
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, errors.New("invalid PBKDF2 parameters")
	}
	if kdf.Iter <= 0 || kdf.Iter > 10_000_000 {
		return nil, errors.New("invalid PBKDF2 iteration count")
	}
	var prf func() hash.Hash
	switch {
	case len(kdf.PRF.Algorithm) == 0 || kdf.PRF.Algorithm.Equal(oidHMACSHA1):
		prf = sha1.New
	case kdf.PRF.Algorithm.Equal(oidHMACSHA224):
		prf = sha256.New224
	case kdf.PRF.Algorithm.Equal(oidHMACSHA256):
		prf = sha256.New
	case kdf.PRF.Algorithm.Equal(oidHMACSHA384):
		prf = sha512.New384
	case kdf.PRF.Algorithm.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, errors.New("unsupported PBKDF2 pseudo-random function")
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch {
	case p.Enc.Algorithm.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case p.Enc.Algorithm.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case p.Enc.Algorithm.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case p.Enc.Algorithm.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, errors.New("unsupported key encryption cipher (use AES-CBC)")
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Enc.Parameters.FullBytes, &iv); err != nil {
		return nil, errors.New("invalid cipher parameters")
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.Iter, keyLen)
	if err != nil {
		return nil, errors.New("cannot derive the key encryption key")
	}
	block, err := newCipher(key)
	if err != nil {
		return nil, errors.New("cannot create the key cipher")
	}
	if len(iv) != block.BlockSize() || len(info.Data) == 0 || len(info.Data)%block.BlockSize() != 0 {
		return nil, errors.New("encrypted private key has an invalid length")
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > block.BlockSize() || pad > len(out) {
		return nil, errors.New("cannot decrypt the private key (wrong ssl.key.password?)")
	}
	for _, c := range out[len(out)-pad:] {
		if int(c) != pad {
			return nil, errors.New("cannot decrypt the private key (wrong ssl.key.password?)")
		}
	}
	return out[:len(out)-pad], nil
}
