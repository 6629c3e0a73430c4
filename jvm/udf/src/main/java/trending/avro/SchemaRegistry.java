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
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.spark.SparkContext;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.util.LongAccumulator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * A Confluent-compatible schema registry as the executors see it: writer schemas by id ({@code
 * GET /schemas/ids/{id}}), cached per JVM.
 *
 * <p>Settings use the names of the Python client ({@code basic.auth.user.info}, {@code
 * ssl.ca.location}, {@code ssl.certificate.location}, {@code ssl.key.location}, {@code timeout}
 * in seconds per request, {@code max.retries}); PEM files, keys in PKCS#8. The job adds two of
 * its own from Spark settings ({@link #withJobSettings}): how long an unknown id stays unknown
 * and how long a task waits for a failing registry.
 *
 * <p>Two answers are about the id: its schema (a 200, kept for the life of the JVM: an id's
 * schema never changes) or "not found" (a 404 with Confluent's error code 40403, kept for {@code
 * spark.trending.registry.missingIdTtl}, so values naming a bogus id cost one request per JVM
 * and TTL, and an id registered later is read after at most that long). Everything else is the
 * registry failing, never the value: no connection, a timeout, a 5xx, a 401 or 403, any other
 * 404 (a proxy's, a wrong URL path's). The task then asks again with a growing pause, logs each
 * failure, counts it ({@link #failedRequests}), and after {@code spark.trending.registry.maxWait}
 * (or {@code max.retries} retries, when set) fails with {@link Unavailable}: Spark runs the task
 * again, and the batch commits only once every value was read. A 40403 is taken at its word: a
 * registry that answers it for an id it holds (a replica behind its leader) makes that id's
 * values dead letters until the TTL ends; an id this JVM has read before is never asked again.
 */
public final class SchemaRegistry implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Logger LOG = LoggerFactory.getLogger(SchemaRegistry.class);
  private static final Map<String, SchemaRegistry.Client> CLIENTS = new ConcurrentHashMap<>();
  private static final Map<SparkContext, LongAccumulator> FAILURES = new WeakHashMap<>();

  /** How long an id the registry does not know stays unknown to an executor (a duration). */
  public static final String MISSING_ID_TTL_CONF = "spark.trending.registry.missingIdTtl";

  /** How long a task waits for a registry that fails before the task fails (a duration). */
  public static final String MAX_WAIT_CONF = "spark.trending.registry.maxWait";

  static final String MISSING_ID_TTL_DEFAULT = "30s";
  static final String MAX_WAIT_DEFAULT = "60s";
  static final String NOT_FOUND = "40403"; // Confluent's error code: schema not found
  static final long FIRST_PAUSE_MS = 500;
  static final long LONGEST_PAUSE_MS = 10_000;
  static final int MISSING_CAPACITY = 10_000;

  private final String settingsJson;
  private final LongAccumulator failures;

  /** A registry from its settings as a JSON object of strings (``url`` may list several). */
  public SchemaRegistry(String settingsJson) {
    this(settingsJson, null);
  }

  /** A registry whose failed requests are counted in {@code failures} (null: not counted). */
  public SchemaRegistry(String settingsJson, LongAccumulator failures) {
    this.settingsJson = settingsJson;
    this.failures = failures;
  }

  /** The writer schema registered under {@code id}: see the class comment for what is cached. */
  public Lookup lookup(int id) {
    return CLIENTS.computeIfAbsent(settingsJson, Client::new).lookup(id, failures);
  }

  /** What tells this registry's answers apart from another's: its settings. */
  String key() {
    return settingsJson;
  }

  /** {@code settingsJson} with the job's own settings, read from {@code conf}. */
  public static String withJobSettings(String settingsJson, RuntimeConfig conf) {
    Map<String, String> settings = parse(settingsJson);
    settings.put("missing.id.ttl.ms", millis(conf, MISSING_ID_TTL_CONF, MISSING_ID_TTL_DEFAULT));
    settings.put("max.wait.ms", millis(conf, MAX_WAIT_CONF, MAX_WAIT_DEFAULT));
    try {
      return JSON.writeValueAsString(new TreeMap<>(settings));
    } catch (IOException error) {
      throw new IllegalStateException(error);
    }
  }

  private static String millis(RuntimeConfig conf, String key, String fallback) {
    String text = conf.get(key, fallback);
    try {
      long ms = JavaUtils.timeStringAsMs(text);
      if (ms < 0) {
        throw new NumberFormatException("negative");
      }
      return Long.toString(ms);
    } catch (NumberFormatException error) {
      throw new IllegalArgumentException(
          key + "=" + text + " is not a duration (such as 500ms, 30s, 2min, 1h)", error);
    }
  }

  /**
   * The counter of {@code context}'s failed registry requests (created on first use, on the
   * driver). It counts the requests of failed tasks too: those are the ones that waited longest.
   */
  public static LongAccumulator failureCounter(SparkContext context) {
    synchronized (FAILURES) {
      return FAILURES.computeIfAbsent(
          context,
          c -> {
            LongAccumulator counter = new LongAccumulator();
            counter.register(c, Option.apply("trending-schema-registry-failures"), true);
            return counter;
          });
    }
  }

  /** Registry requests of {@code context}'s tasks that failed, as far as the driver knows. */
  public static long failedRequests(SparkContext context) {
    synchronized (FAILURES) {
      LongAccumulator counter = FAILURES.get(context);
      return counter == null ? 0 : counter.sum();
    }
  }

  /** What the registry holds under an id: an Avro schema's text, another type, or nothing. */
  public record Lookup(String schemaText, String schemaType, boolean missing) {
    static Lookup found(String text, String type) {
      return new Lookup(text, type, false);
    }

    static final Lookup MISSING = new Lookup(null, null, true);
  }

  /** The registry did not answer, refused the credentials, or answered nonsense, for too long. */
  public static final class Unavailable extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Unavailable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** One failed request: what went wrong, in words that hold no secret. */
  private static final class Failed extends Exception {
    private static final long serialVersionUID = 1L;

    Failed(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** One executor's connection: an HTTP client and the answers so far. */
  static final class Client {
    private final List<URI> bases = new ArrayList<>();
    private final String authorization;
    private final Duration timeout;
    private final int retries; // -1: bounded by maxWait only
    private final long maxWaitNs;
    private final long missingTtlNs;
    private final HttpClient http;
    private final Map<Integer, Lookup> found = new ConcurrentHashMap<>();
    private final Map<Integer, Long> missingUntil = new ConcurrentHashMap<>(); // nanoTime
    private final Object[] locks = new Object[64]; // one request per id at a time in a JVM

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
      retries = (int) Double.parseDouble(settings.getOrDefault("max.retries", "-1"));
      maxWaitNs = msToNs(settings, "max.wait.ms", MAX_WAIT_DEFAULT);
      missingTtlNs = msToNs(settings, "missing.id.ttl.ms", MISSING_ID_TTL_DEFAULT);
      for (int i = 0; i < locks.length; i++) {
        locks[i] = new Object();
      }
      HttpClient.Builder builder = HttpClient.newBuilder().connectTimeout(timeout);
      if (settings.containsKey("ssl.ca.location")
          || settings.containsKey("ssl.certificate.location")) {
        builder.sslContext(tls(settings));
      }
      http = builder.build();
    }

    private static long msToNs(Map<String, String> settings, String key, String fallback) {
      String ms = settings.get(key);
      return (ms == null ? JavaUtils.timeStringAsMs(fallback) : Long.parseLong(ms)) * 1_000_000L;
    }

    private static String portOf(URI uri) {
      return uri.getPort() < 0 ? "" : ":" + uri.getPort();
    }

    Lookup lookup(int id, LongAccumulator failures) {
      Lookup known = cached(id);
      if (known != null) {
        return known;
      }
      synchronized (locks[Math.floorMod(id, locks.length)]) {
        known = cached(id); // another task may have asked meanwhile
        if (known != null) {
          return known;
        }
        Lookup answer = fetch(id, failures);
        if (!answer.missing()) {
          found.put(id, answer); // an id's schema never changes
        } else if (missingTtlNs > 0) {
          forgetMissing();
          missingUntil.put(id, System.nanoTime() + missingTtlNs);
        }
        return answer;
      }
    }

    private Lookup cached(int id) {
      Lookup known = found.get(id);
      if (known != null) {
        return known;
      }
      Long until = missingUntil.get(id);
      return until != null && System.nanoTime() - until < 0 ? Lookup.MISSING : null;
    }

    /** Bounds the unknown ids kept: the expired go first, then all of them. */
    private void forgetMissing() {
      if (missingUntil.size() >= MISSING_CAPACITY) {
        long now = System.nanoTime();
        missingUntil.values().removeIf(until -> now - until >= 0);
        if (missingUntil.size() >= MISSING_CAPACITY) {
          missingUntil.clear();
        }
      }
    }

    private Lookup fetch(int id, LongAccumulator failures) {
      long start = System.nanoTime();
      Failed last = null;
      int failed = 0;
      for (int attempt = 0; ; attempt++) {
        for (URI base : bases) {
          try {
            Lookup answer = answer(base, get(base.resolve("schemas/ids/" + id), start));
            if (failed > 0) {
              LOG.warn(
                  "schema registry {} answered for schema id {} after {} failed requests ({})",
                  hostOf(base), id, failed, seconds(System.nanoTime() - start));
            }
            return answer;
          } catch (Failed failure) {
            last = failure;
          } catch (IOException error) {
            last = new Failed(hostOf(base) + " did not answer: " + error, error);
          } catch (InterruptedException error) {
            Thread.currentThread().interrupt();
            throw new Unavailable("interrupted while asking the schema registry", error);
          }
          failed++;
          if (failures != null) {
            failures.add(1);
          }
        }
        long waited = System.nanoTime() - start;
        if (waited >= maxWaitNs || (retries >= 0 && attempt >= retries)) {
          throw new Unavailable(
              "schema registry did not answer for schema id " + id + " within "
                  + seconds(waited) + " (" + failed + " requests; " + MAX_WAIT_CONF + " "
                  + seconds(maxWaitNs) + "): " + last.getMessage(),
              last.getCause());
        }
        long pauseMs = Math.min(pause(attempt), (maxWaitNs - waited) / 1_000_000L + 1);
        LOG.warn(
            "schema registry failing for schema id {}: {}; asking again in {} (waited {} of {})",
            id, last.getMessage(), seconds(pauseMs * 1_000_000L), seconds(waited),
            seconds(maxWaitNs));
        try {
          Thread.sleep(pauseMs);
        } catch (InterruptedException error) {
          Thread.currentThread().interrupt();
          throw new Unavailable("interrupted while waiting for the schema registry", error);
        }
      }
    }

    /** A pause of 0.5 s doubling up to 10 s, the second half of it at random (no herds). */
    private static long pause(int attempt) {
      long full = Math.min(LONGEST_PAUSE_MS, FIRST_PAUSE_MS << Math.min(attempt, 16));
      return full / 2 + ThreadLocalRandom.current().nextLong(full / 2 + 1);
    }

    private static String seconds(long ns) {
      return String.format(Locale.ROOT, "%.1f s", ns / 1e9);
    }

    private static String hostOf(URI base) {
      return base.getHost() + portOf(base);
    }

    private HttpResponse<String> get(URI uri, long start) throws IOException, InterruptedException {
      long left = Math.max(100_000_000L, maxWaitNs - (System.nanoTime() - start));
      HttpRequest.Builder request =
          HttpRequest.newBuilder(uri)
              .timeout(Duration.ofNanos(Math.min(timeout.toNanos(), left)))
              .header("Accept", "application/vnd.schemaregistry.v1+json, application/json");
      if (authorization != null) {
        request.header("Authorization", authorization);
      }
      return http.send(request.GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static Lookup answer(URI base, HttpResponse<String> response) throws Failed {
      int status = response.statusCode();
      String host = hostOf(base);
      if (status == 404) {
        if (NOT_FOUND.equals(errorCode(response.body()))) {
          return Lookup.MISSING;
        }
        throw new Failed(
            host + " answered HTTP 404 without error code " + NOT_FOUND + " (schema not found):"
                + " is the URL the registry's?",
            null);
      }
      if (status == 401 || status == 403) {
        throw new Failed(
            host + " refused the credentials (HTTP " + status + "); check "
                + "TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO",
            null);
      }
      if (status != 200) {
        throw new Failed(host + " answered HTTP " + status, null);
      }
      JsonNode body;
      try {
        body = JSON.readTree(response.body());
      } catch (IOException error) {
        throw new Failed(host + " answered HTTP 200 with a body that is not JSON", error);
      }
      JsonNode schema = body.get("schema");
      if (schema == null || !schema.isTextual()) {
        throw new Failed(host + " answered HTTP 200 without a schema", null);
      }
      JsonNode type = body.get("schemaType");
      JsonNode references = body.get("references");
      if (references != null && references.size() > 0) {
        return Lookup.found(null, "AVRO with references");
      }
      return Lookup.found(schema.asText(), type == null || type.isNull() ? "AVRO" : type.asText());
    }

    private static String errorCode(String body) {
      try {
        JsonNode code = JSON.readTree(body).get("error_code");
        return code == null ? null : code.asText();
      } catch (IOException | RuntimeException notJson) {
        return null;
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

  static Map<String, String> parse(String settingsJson) {
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
}
