package io.streamstate.dstream.wal;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.format.WalFile;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One process's write-ahead log of one role (driver or receiver) under one root: the writer (made
 * on the first write), the reads, and the files {@code clean} knows. Shared by every Spark {@code
 * WriteAheadLog} instance of that role and root in the process ({@link WalLogs}), so that the
 * receivers of an executor group their syncs, and instances made only to read a block (Spark makes
 * one per block it reads back) start nothing.
 *
 * <p>{@code clean} deletes by name (each name carries the stop time above its records' times): the
 * files this process wrote, those {@code readAll} found, and those one listing found on the first
 * clean (older writers' files). The write path never lists.
 */
final class WalLog {
  private static final Logger LOG = LoggerFactory.getLogger(WalLog.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Storage storage;
  private final String role;
  private final WalSettings settings;
  private final ProcessResources resources;
  private final HedgedWriter hedger;
  private final ConcurrentSkipListSet<String> known = new ConcurrentSkipListSet<>();
  private volatile boolean listed;
  private WalWriter writer; // guarded by this

  WalLog(Storage storage, String role, WalSettings settings, ProcessResources resources) {
    this.storage = storage;
    this.role = role;
    this.settings = settings;
    this.resources = resources;
    this.hedger = new HedgedWriter(settings.hedge(), resources);
  }

  Storage storage() {
    return storage;
  }

  HedgedWriter hedger() {
    return hedger;
  }

  /** Writes one record, durable when this returns. */
  WalRecordHandle write(ByteBuffer record, long time) {
    byte[] payload = new byte[record.remaining()];
    record.duplicate().get(payload);
    return writer().write(payload, time);
  }

  private synchronized WalWriter writer() {
    if (writer == null) {
      String writerId =
          String.format(Locale.ROOT, "%013d-%08x", System.currentTimeMillis(), RANDOM.nextInt());
      writer =
          new WalWriter(
              storage,
              WalNames.writerDir(role, writerId),
              settings,
              hedger,
              resources.cachedPool("wal-journal-close"),
              known::add);
    }
    return writer;
  }

  /** The payload of the record at {@code handle}. */
  ByteBuffer read(WalRecordHandle handle) {
    String location = storage.describe() + "/" + handle.file();
    try (InputStream in = storage.open(handle.file())) {
      in.skipNBytes(handle.offset());
      byte[] header = in.readNBytes(WalFile.RECORD_HEADER_LENGTH);
      if (header.length < WalFile.RECORD_HEADER_LENGTH) {
        throw new CorruptFileException(
            location + " is corrupt: it ends before the record at offset " + handle.offset());
      }
      int length = ByteBuffer.wrap(header).getInt(0);
      if (length < 0 || length > WalFile.MAX_PAYLOAD) {
        throw new CorruptFileException(
            location
                + " is corrupt: a record length of "
                + Integer.toUnsignedString(length)
                + " at offset "
                + handle.offset());
      }
      byte[] body = in.readNBytes(length);
      byte[] whole = new byte[header.length + body.length];
      System.arraycopy(header, 0, whole, 0, header.length);
      System.arraycopy(body, 0, whole, header.length, body.length);
      return ByteBuffer.wrap(WalFile.payloadOf(whole, location, handle.offset()));
    } catch (java.io.EOFException e) {
      throw new CorruptFileException(
          location + " is corrupt: it ends before the record at offset " + handle.offset());
    } catch (IOException e) {
      throw new RetryableException("Cannot read " + location + ": " + e, e);
    }
  }

  /**
   * Every record of every writer of this role, in write order: writers by their start, records by
   * sequence number, one copy of each (a late journal append and its hedge copy hold the same).
   */
  List<ByteBuffer> readAll() {
    Map<String, List<String>> byWriter = new TreeMap<>();
    for (FileInfo f : storage.list(role + "/")) {
      if (WalNames.stopOf(f.name()) >= 0) {
        byWriter
            .computeIfAbsent(WalNames.writerDirOf(f.name()), w -> new ArrayList<>())
            .add(f.name());
        known.add(f.name());
      }
    }
    List<ByteBuffer> all = new ArrayList<>();
    for (List<String> files : byWriter.values()) {
      TreeMap<Long, byte[]> bySeq = new TreeMap<>();
      for (String file : files) {
        byte[] bytes = Storages.readAll(storage, file);
        WalFile.Contents contents = WalFile.read(bytes, storage.describe() + "/" + file);
        if (contents.tornTail()) {
          LOG.info(
              "{}/{}: an incomplete last record at offset {} (a write that never returned); not read",
              storage.describe(),
              file,
              contents.validLength());
        }
        for (WalFile.Record r : contents.records()) {
          bySeq.putIfAbsent(r.seq(), r.payload());
        }
      }
      bySeq.values().forEach(p -> all.add(ByteBuffer.wrap(p)));
    }
    return all;
  }

  /** Deletes every file whose records are all older than {@code threshTime}. */
  void clean(long threshTime, boolean waitForCompletion) {
    ExecutorService pool = resources.cachedPool("wal-clean");
    Future<?> done =
        pool.submit(
            () -> {
              if (!listed) {
                listed = true;
                for (FileInfo f : storage.list(role + "/")) {
                  if (WalNames.stopOf(f.name()) >= 0) {
                    known.add(f.name());
                  }
                }
              }
              String keep;
              synchronized (this) {
                keep = writer == null ? null : writer.retireJournalBefore(threshTime);
              }
              List<String> old = new ArrayList<>();
              for (String name : known) {
                if (WalNames.stopOf(name) <= threshTime && !name.equals(keep)) {
                  old.add(name);
                }
              }
              if (!old.isEmpty()) {
                Storages.deleteAll(storage, old);
                old.forEach(known::remove);
                LOG.debug("Deleted {} write-ahead log files older than {}", old.size(), threshTime);
              }
            });
    if (waitForCompletion) {
      try {
        done.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (java.util.concurrent.ExecutionException e) {
        LOG.warn("Cleaning the write-ahead log failed: {}", e.getCause().toString());
      }
    }
  }

  /** Stops the writer (waits for writes in progress). */
  synchronized void close() {
    if (writer != null) {
      writer.close();
      writer = null;
    }
  }
}
