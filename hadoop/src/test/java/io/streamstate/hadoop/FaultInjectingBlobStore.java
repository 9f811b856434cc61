package io.streamstate.hadoop;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.gaul.s3proxy.blobstore.BlobStore;
import org.gaul.s3proxy.blobstore.ForwardingBlobStore;
import org.gaul.s3proxy.blobstore.domain.MultipartUpload;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadRequest;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.CopyObjectRequest;
import software.amazon.awssdk.services.s3.model.CopyObjectResponse;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectResponse;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * An S3Proxy blob store that misbehaves as S3 and S3-compatible stores may, by a seeded plan, in
 * front of a correct one (the in-memory store of {@link S3ProxyFixture}). While {@link #arm armed},
 * for keys under the armed prefix:
 *
 * <ul>
 *   <li><b>503 SlowDown</b> and <b>500 InternalError before the effect</b>: the request is refused
 *       and nothing happens (a PUT's body is read first, as a server would).
 *   <li><b>500 InternalError after the effect</b> (PUT, CompleteMultipartUpload, copy, DELETE): the
 *       request took effect, then the client is told it failed. A conditional PUT that the client
 *       retries then meets its own object: 412.
 *   <li><b>Delay</b>: a response held for up to {@link Plan#maxDelayMillis}.
 * </ul>
 *
 * <p>Always, armed or not, with the options of the plan: <b>listings lag behind writes</b>: an
 * object written (PUT, multipart completion, copy) is left out of LIST results for {@link
 * Plan#listingLagMillis} after its write returned, while GET and HEAD see it at once (S3's
 * read-after-write; deleted objects leave listings at once: only new objects lag); and
 * <b>second-granular timestamps</b>: {@code Last-Modified} of listings, HEAD and GET is truncated
 * to whole seconds, as S3 gives it.
 *
 * <p>Each fault that happened is counted by kind ({@link #injected}), so that a test can require
 * each kind to have fired. Draws come from a {@link Random} per armed prefix, seeded by {@link
 * #arm}; requests arrive concurrently, so which request gets which draw depends on their order.
 */
public final class FaultInjectingBlobStore extends ForwardingBlobStore {
  /** What went wrong, for counting. */
  public enum Kind {
    /** 503 SlowDown, nothing done. */
    SLOW_DOWN_503,
    /** 500 InternalError, nothing done. */
    INTERNAL_ERROR_BEFORE,
    /** 500 InternalError after the write or delete took effect. */
    INTERNAL_ERROR_AFTER,
    /** A response held back. */
    DELAY,
    /** An object left out of a listing because it was written too recently. */
    LISTING_LAG,
    /** A {@code Last-Modified} whose sub-second part was dropped. */
    SECOND_TIMESTAMP
  }

  /**
   * Rates per request (0 to 1) of each request fault, and the store's lasting behaviour.
   *
   * @param slowDown503 503 SlowDown, before the effect
   * @param internalErrorBefore 500, before the effect
   * @param internalErrorAfter 500 after the effect, on writes and deletes
   * @param delay a delayed response
   * @param maxDelayMillis the longest delay
   * @param listingLagMillis how long a new object stays out of listings (0: none)
   * @param secondTimestamps whether {@code Last-Modified} is truncated to whole seconds
   */
  public record Plan(
      double slowDown503,
      double internalErrorBefore,
      double internalErrorAfter,
      double delay,
      long maxDelayMillis,
      long listingLagMillis,
      boolean secondTimestamps) {
    /** A store that behaves: no request faults, no lag, millisecond timestamps. */
    public static final Plan NONE = new Plan(0, 0, 0, 0, 0, 0, false);
  }

  private volatile Plan plan = Plan.NONE;

  /** The draws of each armed key prefix (one schedule each). */
  private final Map<String, Random> armed = new ConcurrentHashMap<>();

  private final Map<Kind, AtomicLong> injected = new EnumMap<>(Kind.class);
  private final Map<String, Kind> once = new ConcurrentHashMap<>();

  /** When each recently written key shows up in listings (container/key to epoch millis). */
  private final Map<String, Long> listedFrom = new ConcurrentHashMap<>();

  public FaultInjectingBlobStore(BlobStore delegate) {
    super(delegate);
    for (Kind k : Kind.values()) {
      injected.put(k, new AtomicLong());
    }
  }

  /** The keys the listing lag applies to (all by default). */
  private volatile Predicate<String> laggingKeys = key -> true;

  /**
   * Lags only new keys that {@code keys} accepts (the plan's lag; all keys by default): for a test
   * of one reader's handling of the lag.
   */
  public void lagOnly(Predicate<String> keys) {
    this.laggingKeys = keys;
  }

  /** Sets the lasting behaviour (listing lag, timestamps) and the request fault rates. */
  public void setPlan(Plan plan) {
    this.plan = plan;
  }

  /**
   * Injects request faults on keys starting with {@code keyPrefix}, drawn from {@code seed};
   * several prefixes (schedules) may be armed at once, each with its own draws.
   */
  public void arm(long seed, String keyPrefix) {
    armed.put(keyPrefix, new Random(seed));
  }

  /**
   * The next request on exactly {@code key} fails with {@code kind} ({@link Kind#SLOW_DOWN_503},
   * {@link Kind#INTERNAL_ERROR_BEFORE} or {@link Kind#INTERNAL_ERROR_AFTER}), armed or not: for
   * tests of one fault.
   */
  public void failNextRequestOn(String key, Kind kind) {
    if (kind != Kind.SLOW_DOWN_503
        && kind != Kind.INTERNAL_ERROR_BEFORE
        && kind != Kind.INTERNAL_ERROR_AFTER) {
      throw new IllegalArgumentException("Not a request error: " + kind);
    }
    once.put(key, kind);
  }

  /**
   * No more request faults on {@code keyPrefix} (listing lag and timestamps stay as the plan says).
   */
  public void disarm(String keyPrefix) {
    armed.remove(keyPrefix);
  }

  /** Faults that happened, by kind, since this store was made. */
  public Map<Kind, Long> injected() {
    Map<Kind, Long> counts = new EnumMap<>(Kind.class);
    injected.forEach((k, v) -> counts.put(k, v.get()));
    return counts;
  }

  // ---- request faults ----

  /** The fault drawn for one request: the kind to throw (or null), and a delay. */
  private record Draw(Kind error, long delayMillis) {}

  private static final Draw NOTHING = new Draw(null, 0);

  private Draw draw(String key, boolean hasEffect) {
    Kind planned = key == null ? null : once.remove(key);
    if (planned != null) {
      return new Draw(planned == Kind.INTERNAL_ERROR_AFTER && !hasEffect ? null : planned, 0);
    }
    Random random = null;
    if (key != null) {
      for (Map.Entry<String, Random> e : armed.entrySet()) {
        if (key.startsWith(e.getKey())) {
          random = e.getValue();
        }
      }
    }
    if (random == null) {
      return NOTHING;
    }
    Plan p = plan;
    double errorRoll;
    double delayRoll;
    long delay;
    synchronized (random) {
      errorRoll = random.nextDouble();
      delayRoll = random.nextDouble();
      delay = p.maxDelayMillis() > 0 ? 1 + random.nextInt((int) p.maxDelayMillis()) : 0;
    }
    Kind error = null;
    if (errorRoll < p.slowDown503()) {
      error = Kind.SLOW_DOWN_503;
    } else if (errorRoll < p.slowDown503() + p.internalErrorBefore()) {
      error = Kind.INTERNAL_ERROR_BEFORE;
    } else if (hasEffect
        && errorRoll < p.slowDown503() + p.internalErrorBefore() + p.internalErrorAfter()) {
      error = Kind.INTERNAL_ERROR_AFTER;
    }
    return new Draw(error, delayRoll < p.delay() ? delay : 0);
  }

  /** The delay, then the error that is due before the effect, if any. */
  private void before(Draw d, InputStream body) {
    if (d.delayMillis() > 0) {
      injected.get(Kind.DELAY).incrementAndGet();
      try {
        Thread.sleep(d.delayMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (d.error() == Kind.SLOW_DOWN_503 || d.error() == Kind.INTERNAL_ERROR_BEFORE) {
      if (body != null) {
        drain(body);
      }
      throw error(d.error());
    }
  }

  /** The error that is due after the effect, if any. */
  private void after(Draw d) {
    if (d.error() == Kind.INTERNAL_ERROR_AFTER) {
      throw error(Kind.INTERNAL_ERROR_AFTER);
    }
  }

  private S3Exception error(Kind kind) {
    injected.get(kind).incrementAndGet();
    boolean slowDown = kind == Kind.SLOW_DOWN_503;
    String code = slowDown ? "SlowDown" : "InternalError";
    String message =
        slowDown
            ? "Please reduce your request rate (injected)."
            : "We encountered an internal error. Please try again (injected"
                + (kind == Kind.INTERNAL_ERROR_AFTER ? ", after the request took effect" : "")
                + ").";
    return (S3Exception)
        S3Exception.builder()
            .statusCode(slowDown ? 503 : 500)
            .message(message)
            .awsErrorDetails(
                AwsErrorDetails.builder()
                    .errorCode(code)
                    .errorMessage(message)
                    .serviceName("S3")
                    .build())
            .build();
  }

  private static void drain(InputStream body) {
    try {
      body.transferTo(java.io.OutputStream.nullOutputStream());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ---- writes ----

  @Override
  public PutObjectResponse putBlob(PutObjectRequest request, InputStream body) {
    Draw d = draw(request.key(), true);
    before(d, body);
    boolean existed = exists(request.bucket(), request.key());
    PutObjectResponse response = super.putBlob(request, body);
    if (!existed) {
      written(request.bucket(), request.key());
    }
    after(d);
    return response;
  }

  @Override
  public CompleteMultipartUploadResponse completeMultipartUpload(
      MultipartUpload upload, CompleteMultipartUploadRequest request) {
    Draw d = draw(request.key(), true);
    before(d, null);
    boolean existed = exists(request.bucket(), request.key());
    CompleteMultipartUploadResponse response = super.completeMultipartUpload(upload, request);
    if (!existed) {
      written(request.bucket(), request.key());
    }
    after(d);
    return response;
  }

  @Override
  public CopyObjectResponse copyBlob(CopyObjectRequest request) {
    Draw d = draw(request.destinationKey(), true);
    before(d, null);
    boolean existed = exists(request.destinationBucket(), request.destinationKey());
    CopyObjectResponse response = super.copyBlob(request);
    if (!existed) {
      written(request.destinationBucket(), request.destinationKey());
    }
    after(d);
    return response;
  }

  @Override
  public DeleteObjectResponse removeBlob(DeleteObjectRequest request) {
    Draw d = draw(request.key(), true);
    before(d, null);
    DeleteObjectResponse response = super.removeBlob(request);
    listedFrom.remove(request.bucket() + "/" + request.key());
    after(d);
    return response;
  }

  private boolean exists(String bucket, String key) {
    return plan.listingLagMillis() > 0 && delegate().blobExists(bucket, key);
  }

  /** A new object: out of listings for the lag (an overwritten one stays listed, as it was). */
  private void written(String bucket, String key) {
    long lag = plan.listingLagMillis();
    if (lag > 0 && laggingKeys.test(key)) {
      listedFrom.put(bucket + "/" + key, System.currentTimeMillis() + lag);
    }
  }

  // ---- reads ----

  @Override
  public ResponseInputStream<GetObjectResponse> getBlob(GetObjectRequest request) {
    before(draw(request.key(), false), null);
    ResponseInputStream<GetObjectResponse> in = super.getBlob(request);
    if (!plan.secondTimestamps() || in.response().lastModified() == null) {
      return in;
    }
    GetObjectResponse r = in.response();
    return new ResponseInputStream<>(
        r.toBuilder().lastModified(truncate(r.lastModified())).build(), in);
  }

  @Override
  public HeadObjectResponse blobMetadata(HeadObjectRequest request) {
    before(draw(request.key(), false), null);
    HeadObjectResponse r = super.blobMetadata(request);
    if (r == null || !plan.secondTimestamps() || r.lastModified() == null) {
      return r;
    }
    return r.toBuilder().lastModified(truncate(r.lastModified())).build();
  }

  @Override
  public ListObjectsV2Response list(ListObjectsV2Request request) {
    String prefix = request.prefix() == null ? "" : request.prefix();
    before(draw(prefix, false), null);
    ListObjectsV2Response r = super.list(request);
    Plan p = plan;
    if (p.listingLagMillis() == 0 && !p.secondTimestamps()) {
      return r;
    }
    long now = System.currentTimeMillis();
    List<S3Object> shown = new ArrayList<>();
    for (S3Object o : r.contents()) {
      Long from = listedFrom.get(request.bucket() + "/" + o.key());
      if (from != null) {
        if (now < from) {
          injected.get(Kind.LISTING_LAG).incrementAndGet();
          continue;
        }
        listedFrom.remove(request.bucket() + "/" + o.key(), from);
      }
      shown.add(
          p.secondTimestamps() && o.lastModified() != null
              ? o.toBuilder().lastModified(truncate(o.lastModified())).build()
              : o);
    }
    return r.toBuilder().contents(shown).keyCount(shown.size() + r.commonPrefixes().size()).build();
  }

  private Instant truncate(Instant t) {
    Instant whole = t.truncatedTo(ChronoUnit.SECONDS);
    if (!whole.equals(t)) {
      injected.get(Kind.SECOND_TIMESTAMP).incrementAndGet();
    }
    return whole;
  }
}
