package trending.avro;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.Serializable;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A Confluent-compatible schema registry as the executors see it: writer schemas by id, fetched
 * once per JVM ({@code GET /schemas/ids/{id}}) and cached.
 *
 * <p>Settings use the names of the Python client ({@code basic.auth.user.info}, {@code
 * ssl.ca.location}, {@code ssl.certificate.location}, {@code ssl.key.location}, {@code timeout}
 * in seconds, {@code max.retries}); PEM files, keys in PKCS#8. An id the registry does not know is
 * an answer ({@link Lookup#missing}); a registry that does not answer is an error ({@link
 * Unavailable}), so the batch fails and is retried instead of dead-lettering good records.
 */
public final class SchemaRegistry implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, SchemaRegistry.Client> CLIENTS = new ConcurrentHashMap<>();

  private final String settingsJson;

  /** A registry from its settings as a JSON object of strings (``url`` may list several). */
  public SchemaRegistry(String settingsJson) {
    this.settingsJson = settingsJson;
  }

  /** The writer schema registered under {@code id}, cached for the life of the JVM. */
  public Lookup lookup(int id) {
    return CLIENTS.computeIfAbsent(settingsJson, Client::new).lookup(id);
  }

  /** What the registry holds under an id: an Avro schema's text, another type, or nothing. */
  public record Lookup(String schemaText, String schemaType, boolean missing) {
    static Lookup found(String text, String type) {
      return new Lookup(text, type, false);
    }

    static final Lookup MISSING = new Lookup(null, null, true);
  }

  /** The registry did not answer, refused the credentials, or answered nonsense. */
  public static final class Unavailable extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Unavailable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** One executor's connection: an HTTP client and the schemas seen so far. */
  static final class Client {
    private final List<URI> bases = new ArrayList<>();
    private final String authorization;
    private final Duration timeout;
    private final int retries;
    private final HttpClient http;
    private final Map<Integer, Lookup> found = new ConcurrentHashMap<>();

    Client(String settingsJson) {
      Map<String, String> settings = parse(settingsJson);
      String userInfo = settings.get("basic.auth.user.info");
      for (String url : settings.getOrDefault("url", "").split(",")) {
        URI uri = URI.create(url.strip());
        if (uri.getUserInfo() != null) {
          userInfo = userInfo == null ? uri.getUserInfo() : userInfo;
          uri = URI.create(uri.getScheme() + "://" + uri.getHost() + portOf(uri) + uri.getPath());
        }
        String text = uri.toString();
        bases.add(URI.create(text.endsWith("/") ? text : text + "/"));
      }
      authorization =
          userInfo == null
              ? null
              : "Basic "
                  + Base64.getEncoder().encodeToString(userInfo.getBytes(StandardCharsets.UTF_8));
      double seconds = Double.parseDouble(settings.getOrDefault("timeout", "30"));
      timeout = Duration.ofMillis((long) (seconds * 1000));
      retries = Integer.parseInt(settings.getOrDefault("max.retries", "3"));
      HttpClient.Builder builder = HttpClient.newBuilder().connectTimeout(timeout);
      if (settings.containsKey("ssl.ca.location")
          || settings.containsKey("ssl.certificate.location")) {
        builder.sslContext(tls(settings));
      }
      http = builder.build();
    }

    private static String portOf(URI uri) {
      return uri.getPort() < 0 ? "" : ":" + uri.getPort();
    }

    Lookup lookup(int id) {
      Lookup known = found.get(id);
      if (known != null) {
        return known;
      }
      Lookup answer = fetch(id);
      if (!answer.missing()) {
        found.put(id, answer); // ids are immutable; a missing one may be registered later
      }
      return answer;
    }

    private Lookup fetch(int id) {
      Exception last = null;
      for (int attempt = 0; attempt <= retries; attempt++) {
        for (URI base : bases) {
          try {
            return answer(id, base, get(base.resolve("schemas/ids/" + id)));
          } catch (IOException error) {
            last = error;
          } catch (InterruptedException error) {
            Thread.currentThread().interrupt();
            throw new Unavailable("interrupted while asking the schema registry", error);
          }
        }
        sleep(attempt);
      }
      throw new Unavailable(
          "schema registry " + bases.get(0).getHost() + " did not answer for schema id " + id
              + " after " + (retries + 1) + " attempts: " + last,
          last);
    }

    private HttpResponse<String> get(URI uri) throws IOException, InterruptedException {
      HttpRequest.Builder request =
          HttpRequest.newBuilder(uri)
              .timeout(timeout)
              .header("Accept", "application/vnd.schemaregistry.v1+json, application/json");
      if (authorization != null) {
        request.header("Authorization", authorization);
      }
      return http.send(request.GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static Lookup answer(int id, URI base, HttpResponse<String> response)
        throws IOException {
      int status = response.statusCode();
      if (status == 404) {
        return Lookup.MISSING;
      }
      if (status == 401 || status == 403) {
        throw new Unavailable(
            "schema registry " + base.getHost() + " refused the credentials (HTTP " + status
                + "); check TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO",
            null);
      }
      if (status != 200) {
        throw new IOException("HTTP " + status + " for schema id " + id);
      }
      JsonNode body = JSON.readTree(response.body());
      JsonNode schema = body.get("schema");
      if (schema == null || !schema.isTextual()) {
        throw new IOException("no schema in the registry's answer for schema id " + id);
      }
      JsonNode type = body.get("schemaType");
      JsonNode references = body.get("references");
      if (references != null && references.size() > 0) {
        return Lookup.found(null, "AVRO with references");
      }
      return Lookup.found(schema.asText(), type == null || type.isNull() ? "AVRO" : type.asText());
    }

    private static void sleep(int attempt) {
      try {
        Thread.sleep(Math.min(5_000L, 200L << attempt));
      } catch (InterruptedException error) {
        Thread.currentThread().interrupt();
      }
    }

    private static Map<String, String> parse(String settingsJson) {
      try {
        Map<String, String> settings = new HashMap<>();
        for (Map.Entry<String, JsonNode> entry : JSON.readTree(settingsJson).properties()) {
          settings.put(entry.getKey(), entry.getValue().asText());
        }
        return settings;
      } catch (IOException error) {
        throw new IllegalArgumentException("schema registry settings are not a JSON object", error);
      }
    }

    private static SSLContext tls(Map<String, String> settings) {
      try {
        TrustManagerFactory trust = null;
        String ca = settings.get("ssl.ca.location");
        if (ca != null) {
          KeyStore roots = KeyStore.getInstance("PKCS12");
          roots.load(null, null);
          int n = 0;
          for (Certificate certificate : certificates(ca)) {
            roots.setCertificateEntry("ca-" + n++, certificate);
          }
          trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
          trust.init(roots);
        }
        KeyManagerFactory keys = null;
        String certificate = settings.get("ssl.certificate.location");
        if (certificate != null) {
          KeyStore own = KeyStore.getInstance("PKCS12");
          own.load(null, null);
          char[] none = new char[0];
          own.setKeyEntry(
              "client",
              privateKey(settings.get("ssl.key.location")),
              none,
              certificates(certificate).toArray(new Certificate[0]));
          keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
          keys.init(own, none);
        }
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(
            keys == null ? null : keys.getKeyManagers(),
            trust == null ? null : trust.getTrustManagers(),
            null);
        return context;
      } catch (IOException | GeneralSecurityException error) {
        throw new IllegalArgumentException(
            "schema registry TLS settings: " + error.getMessage(), error);
      }
    }

    private static Collection<? extends Certificate> certificates(String path)
        throws IOException, GeneralSecurityException {
      byte[] pem = Files.readAllBytes(Path.of(path));
      return CertificateFactory.getInstance("X.509")
          .generateCertificates(new ByteArrayInputStream(pem));
    }

    private static PrivateKey privateKey(String path) throws IOException, GeneralSecurityException {
      if (path == null) {
        throw new GeneralSecurityException("ssl.certificate.location needs ssl.key.location");
      }
      String pem = Files.readString(Path.of(path));
      if (!pem.contains("-----BEGIN PRIVATE KEY-----")) {
        throw new GeneralSecurityException(
            "ssl.key.location must hold an unencrypted PKCS#8 key (BEGIN PRIVATE KEY)");
      }
      String body = pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
      PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getDecoder().decode(body));
      for (String algorithm : new String[] {"RSA", "EC", "Ed25519"}) {
        try {
          return KeyFactory.getInstance(algorithm).generatePrivate(spec);
        } catch (GeneralSecurityException wrongAlgorithm) {
          // try the next
        }
      }
      throw new GeneralSecurityException("ssl.key.location: not an RSA, EC or Ed25519 key");
    }
  }
}
