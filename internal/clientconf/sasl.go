package clientconf

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Login module classes of sasl.jaas.config.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	IAMLoginModule         = "software.amazon.msk.auth.iam.IAMLoginModule"

	// OAuthBearerLoginCallbackHandler is KIP-768's OIDC client-credentials
	// login handler (Kafka 3.4+ name; the 3.1-3.3 name has a ".secured"
	// package component and is accepted too).
	OAuthBearerLoginCallbackHandler = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
	oauthSecuredHandler             = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler"
	iamCallbackHandler              = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
)

// buildSASL converts sasl.mechanism and sasl.jaas.config into a new
// franz-go mechanism instance.
func (b *builder) buildSASL() error {
	c := &b.out.Conn
	mech, ok := b.get("sasl.mechanism")
	if !ok || mech == "" {
		return b.errf("sasl.mechanism", "", "not set with security.protocol=%s; Kafka's default, GSSAPI (Kerberos), is not supported: set PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM", c.Protocol)
	}
	mech = strings.ToUpper(mech)
	c.Mechanism = mech
	jaasText, hasJAAS := b.s["sasl.jaas.config"]
	var j *JAAS
	if hasJAAS && strings.TrimSpace(jaasText) != "" {
		var err error
		if j, err = ParseJAAS(jaasText); err != nil {
			return b.errf("sasl.jaas.config", "", "%v", err)
		}
	}
	needJAAS := func() error {
		if j == nil {
			return b.errf("sasl.jaas.config", "", "required for sasl.mechanism=%s (kmirror does not read JAAS files)", mech)
		}
		return nil
	}
	checkModule := func(want string) {
		if j.Module != want {
			b.warn("sasl.jaas.config", fmt.Sprintf("login module %s is unusual for sasl.mechanism=%s (expected %s): its username and password options are used", j.Module, mech, want))
		}
	}
	userPass := func() (string, string, error) {
		u, okU := j.Options["username"]
		p, okP := j.Options["password"]
		if !okU || u == "" {
			return "", "", b.errf("sasl.jaas.config", "", "login module %s has no username option", j.Module)
		}
		if !okP {
			return "", "", b.errf("sasl.jaas.config", "", "login module %s has no password option", j.Module)
		}
		return u, p, nil
	}
	switch mech {
	case "PLAIN":
		if err := needJAAS(); err != nil {
			return err
		}
		checkModule(PlainLoginModule)
		u, p, err := userPass()
		if err != nil {
			return err
		}
		c.User = u
		c.SASL = plain.Auth{User: u, Pass: p}.AsMechanism()
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		if err := needJAAS(); err != nil {
			return err
		}
		checkModule(ScramLoginModule)
		u, p, err := userPass()
		if err != nil {
			return err
		}
		c.User = u
		a := scram.Auth{User: u, Pass: p, IsToken: strings.EqualFold(j.Options["tokenauth"], "true")}
		if mech == "SCRAM-SHA-256" {
			c.SASL = a.AsSha256Mechanism()
		} else {
			c.SASL = a.AsSha512Mechanism()
		}
	case "OAUTHBEARER":
		if err := needJAAS(); err != nil {
			return err
		}
		checkModule(OAuthBearerLoginModule)
		m, user, err := b.oauthMechanism(j)
		if err != nil {
			return err
		}
		c.User = user
		c.SASL = m
	case "AWS_MSK_IAM":
		if j != nil {
			checkModule(IAMLoginModule)
			for _, o := range []string{"awsProfileName", "awsRoleArn", "awsRoleSessionName", "awsStsRegion", "awsRoleAccessKeyId", "awsRoleSecretAccessKey"} {
				if _, ok := j.Options[o]; ok {
					return b.errf("sasl.jaas.config", "", "IAMLoginModule option %s is not supported: kmirror takes AWS credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN", o)
				}
			}
		}
		if h, ok := b.get("sasl.client.callback.handler.class"); ok && h != "" && h != iamCallbackHandler {
			return b.errf("sasl.client.callback.handler.class", h, "not supported with AWS_MSK_IAM")
		}
		lookup := b.env.LookupEnv
		if _, ok := lookup("AWS_ACCESS_KEY_ID"); !ok {
			return b.errf("sasl.mechanism", mech, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set in the environment (kmirror reads AWS credentials only from there)")
		}
		b.warn("sasl.mechanism", "AWS_MSK_IAM: credentials are read from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN at each login; profiles, instance roles and role assumption are not supported")
		c.SASL = aws.ManagedStreamingIAM(func(context.Context) (aws.Auth, error) {
			ak, _ := lookup("AWS_ACCESS_KEY_ID")
			sk, _ := lookup("AWS_SECRET_ACCESS_KEY")
			st, _ := lookup("AWS_SESSION_TOKEN")
			if ak == "" || sk == "" {
				return aws.Auth{}, errors.New("clientconf: AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is not set")
			}
			return aws.Auth{AccessKey: ak, SecretKey: sk, SessionToken: st, UserAgent: "kmirror"}, nil
		})
	case "GSSAPI":
		return b.errf("sasl.mechanism", mech, "GSSAPI (Kerberos) is not supported by kmirror")
	default:
		return b.errf("sasl.mechanism", mech, "unknown mechanism (want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM)")
	}
	b.line("sasl.mechanism", mech, "")
	if hasJAAS {
		effect := "credentials of " + mech
		if c.User != "" {
			effect += fmt.Sprintf(" (user %q)", c.User)
		}
		b.line("sasl.jaas.config", jaasText, effect)
	}
	return nil
}

// oauthMechanism returns an OAUTHBEARER mechanism for Kafka's unsecured
// login (no callback handler: an unsigned JWT built from the
// unsecuredLogin* options) or KIP-768's client-credentials login
// (OAuthBearerLoginCallbackHandler with sasl.oauthbearer.token.endpoint.url
// and the clientId, clientSecret and scope options; a file: URL names a
// file holding the token). Each call returns a new mechanism with its own
// token cache (docs/field-failures.md case B39: no token is shared between clusters).
func (b *builder) oauthMechanism(j *JAAS) (sasl.Mechanism, string, error) {
	handler, _ := b.get("sasl.login.callback.handler.class")
	src := &tokenSource{now: b.env.Now}
	var user string
	switch handler {
	case "":
		sub, ok := j.Options["unsecuredLoginStringClaim_sub"]
		if !ok || sub == "" {
			return nil, "", b.errf("sasl.jaas.config", "", "OAUTHBEARER without sasl.login.callback.handler.class uses Kafka's unsecured login, which needs the unsecuredLoginStringClaim_sub option")
		}
		u, err := unsecuredJWT(j.Options)
		if err != nil {
			return nil, "", b.errf("sasl.jaas.config", "", "%v", err)
		}
		user = sub
		src.fetch = func(context.Context) (string, time.Duration, error) { return u(b.env.Now()) }
		b.warn("sasl.jaas.config", "OAUTHBEARER with Kafka's unsecured login: the token is unsigned, for development only")
		src.ext = prefixed(j.Options, "unsecuredLoginExtension_")
	case OAuthBearerLoginCallbackHandler, oauthSecuredHandler:
		endpoint, ok := b.get("sasl.oauthbearer.token.endpoint.url")
		if !ok || endpoint == "" {
			return nil, "", b.errf("sasl.oauthbearer.token.endpoint.url", "", "required with sasl.login.callback.handler.class=%s", handler)
		}
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
			return nil, "", b.errf("sasl.oauthbearer.token.endpoint.url", "", "must be an http, https or file URL")
		}
		b.line("sasl.login.callback.handler.class", handler, "OAuth client-credentials login (KIP-768)")
		b.line("sasl.oauthbearer.token.endpoint.url", endpoint, "token endpoint")
		src.ext = prefixed(j.Options, "extension_")
		if u.Scheme == "file" {
			path := u.Path
			read := b.env.ReadFile
			src.fetch = func(context.Context) (string, time.Duration, error) {
				data, err := read(path)
				if err != nil {
					return "", 0, fmt.Errorf("clientconf: cannot read the OAuth token file %q: %v", path, fileErr(err))
				}
				tok := strings.TrimSpace(string(data))
				return tok, jwtLifetime(tok, b.env.Now(), time.Minute), nil
			}
			user = "(token file)"
			break
		}
		id, secret := j.Options["clientId"], j.Options["clientSecret"]
		if id == "" || secret == "" {
			return nil, "", b.errf("sasl.jaas.config", "", "the OAuth client-credentials login needs the clientId and clientSecret options")
		}
		user = id
		urlencode := false
		if v, ok := b.s["sasl.oauthbearer.header.urlencode"]; ok {
			on, err := b.boolean("sasl.oauthbearer.header.urlencode", v)
			if err != nil {
				return nil, "", err
			}
			urlencode = on
		}
		hc := b.env.HTTPClient
		if hc == nil {
			timeout := 20 * time.Second
			for _, k := range []string{"sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms"} {
				if v, ok := b.s[k]; ok {
					d, err := b.millis(k, v, 1)
					if err != nil {
						return nil, "", err
					}
					timeout = d
				}
			}
			hc = &http.Client{Timeout: timeout, Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
				TLSHandshakeTimeout: timeout,
			}}
		}
		src.fetch = clientCredentials(hc, endpoint, id, secret, j.Options["scope"], urlencode, b.env.Now)
	default:
		return nil, "", b.errf("sasl.login.callback.handler.class", handler, "not supported: kmirror implements Kafka's unsecured OAUTHBEARER login and %s", OAuthBearerLoginCallbackHandler)
	}
	return oauth.Oauth(src.auth), user, nil
}

func prefixed(opts map[string]string, prefix string) map[string]string {
	var out map[string]string
	for k, v := range opts {
		if name, ok := strings.CutPrefix(k, prefix); ok && name != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}

// tokenSource caches one OAuth token and renews it at 80% of its
// lifetime (Kafka's default sasl.login.refresh.window.factor).
type tokenSource struct {
	fetch func(context.Context) (token string, lifetime time.Duration, err error)
	ext   map[string]string
	now   func() time.Time

	mu      sync.Mutex // guards the fields below
	token   string
	renewAt time.Time
}

func (s *tokenSource) auth(ctx context.Context) (oauth.Auth, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.token == "" || !now.Before(s.renewAt) {
		tok, life, err := s.fetch(ctx)
		if err != nil {
			return oauth.Auth{}, err
		}
		s.token = tok
		s.renewAt = now.Add(life * 8 / 10)
	}
	return oauth.Auth{Token: s.token, Extensions: s.ext}, nil
}

// unsecuredJWT returns a generator of Kafka's unsecured login tokens
// (OAuthBearerUnsecuredLoginCallbackHandler): header {"alg":"none"},
// claims from unsecuredLoginStringClaim_*, unsecuredLoginNumberClaim_*,
// unsecuredLoginListClaim_* (first character is the separator), iat and
// exp (unsecuredLoginLifetimeSeconds, default 3600), empty signature.
func unsecuredJWT(opts map[string]string) (func(time.Time) (string, time.Duration, error), error) {
	lifetime := time.Hour
	if v, ok := opts["unsecuredLoginLifetimeSeconds"]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			return nil, errors.New("unsecuredLoginLifetimeSeconds must be a positive number")
		}
		lifetime = time.Duration(n) * time.Second
	}
	claims := map[string]any{}
	for k, v := range opts {
		switch {
		case strings.HasPrefix(k, "unsecuredLoginStringClaim_"):
			claims[strings.TrimPrefix(k, "unsecuredLoginStringClaim_")] = v
		case strings.HasPrefix(k, "unsecuredLoginNumberClaim_"):
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, fmt.Errorf("option %s is not a number", k)
			}
			claims[strings.TrimPrefix(k, "unsecuredLoginNumberClaim_")] = n
		case strings.HasPrefix(k, "unsecuredLoginListClaim_"):
			if v == "" {
				claims[strings.TrimPrefix(k, "unsecuredLoginListClaim_")] = []string{}
				continue
			}
			sep := v[:1]
			items := strings.Split(v[1:], sep)
			var list []string
			for _, it := range items {
				if it != "" {
					list = append(list, it)
				}
			}
			claims[strings.TrimPrefix(k, "unsecuredLoginListClaim_")] = list
		}
	}
	if p, ok := opts["unsecuredLoginPrincipalClaimName"]; ok && p != "sub" {
		if _, ok := claims[p]; !ok {
			return nil, fmt.Errorf("principal claim %s is not set", p)
		}
	}
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`))
	return func(now time.Time) (string, time.Duration, error) {
		c := make(map[string]any, len(claims)+2)
		for k, v := range claims {
			c[k] = v
		}
		c["iat"] = now.Unix()
		c["exp"] = now.Add(lifetime).Unix()
		body, err := json.Marshal(c)
		if err != nil {
			return "", 0, err
		}
		return header + "." + base64.RawURLEncoding.EncodeToString(body) + ".", lifetime, nil
	}, nil
}

// clientCredentials returns a token fetcher for the OAuth 2 client
// credentials grant (RFC 6749 section 4.4) as Kafka's
// OAuthBearerLoginCallbackHandler performs it.
func clientCredentials(hc *http.Client, endpoint, id, secret, scope string, urlencode bool, now func() time.Time) func(context.Context) (string, time.Duration, error) {
	return func(ctx context.Context) (string, time.Duration, error) {
		form := url.Values{"grant_type": {"client_credentials"}}
		if scope != "" {
			form.Set("scope", scope)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
		if err != nil {
			return "", 0, errors.New("clientconf: cannot build the OAuth token request")
		}
		u, p := id, secret
		if urlencode {
			u, p = url.QueryEscape(id), url.QueryEscape(secret)
		}
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u+":"+p)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return "", 0, errors.New("clientconf: OAuth token request failed: " + redactURLError(err))
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return "", 0, errors.New("clientconf: cannot read the OAuth token response")
		}
		if resp.StatusCode != http.StatusOK {
			return "", 0, fmt.Errorf("clientconf: OAuth token endpoint answered HTTP %d", resp.StatusCode)
		}
		var tr struct {
			AccessToken string          `json:"access_token"`
			ExpiresIn   json.RawMessage `json:"expires_in"`
		}
		if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
			return "", 0, errors.New("clientconf: the OAuth token response has no access_token")
		}
		life := jwtLifetime(tr.AccessToken, now(), time.Hour)
		if n, err := strconv.ParseFloat(strings.Trim(string(tr.ExpiresIn), `"`), 64); err == nil && n > 0 {
			life = time.Duration(n * float64(time.Second))
		}
		return tr.AccessToken, life, nil
	}
}

// redactURLError keeps the cause of an HTTP client error without the URL.
func redactURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "transport error"
}

// jwtLifetime returns the time left until the exp claim of a JWT, or def
// when the token is not a JWT with an exp claim in the future.
func jwtLifetime(tok string, now time.Time, def time.Duration) time.Duration {
	parts := strings.Split(tok, ".")
	if len(parts) < 2 {
		return def
	}
	body, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return def
	}
	var c struct {
		Exp float64 `json:"exp"`
	}
	if json.Unmarshal(body, &c) != nil || c.Exp == 0 {
		return def
	}
	left := time.Unix(int64(c.Exp), 0).Sub(now)
	if left <= 0 {
		return def
	}
	return left
}
