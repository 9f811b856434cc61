package io.streamstate.spark.shared.checkpoint;

import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.core.hedge.HedgeCopy;
import io.streamstate.core.journal.JournalAppendCopy;
import io.streamstate.core.journal.JournalFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.hadoop.HadoopStorage;

/**
 * The two copies of a hedged put to a {@link LogJournal} (docs/protocol.md, "Spark log journal"):
 * the append to the journal, and the entry as a plain file, written if the append is late.
 */
final class LogJournalCopies {
  private LogJournalCopies() {}

  /**
   * The append of one put's records to one journal, as the primary copy of a hedged put. When its
   * hedge starts, the journal is retired ({@link JournalAppendCopy}): later entries go to the next
   * epoch's journal, which the hedge's file and it are placed away from on HDFS.
   */
  static final class AppendCopy extends JournalAppendCopy {
    private final HadoopStorage storage;
    private final JournalFile journal;
    private final byte[] records;
    private final int recordCount;

    AppendCopy(HadoopStorage storage, JournalFile journal, byte[] records, int recordCount) {
      this.storage = storage;
      this.journal = journal;
      this.records = records;
      this.recordCount = recordCount;
    }

    @Override
    public String write(byte[] content) {
      return journal.name() + "@" + journal.append(records, recordCount);
    }

    @Override
    protected JournalFile journal() {
      return journal;
    }

    @Override
    public String describe() {
      return storage.describe() + "/" + journal.name() + " (append)";
    }
  }

  /**
   * The entry as a plain file, the hedge of a late append. After creating it, checks that no newer
   * journal exists: a writer fenced by a newer one must not believe its entry published; the newer
   * writer either listed after this file was created (and saw it), or created its journal before
   * (and is seen here).
   */
  static final class PlainEntryCopy implements HedgeCopy {
    private final HadoopStorage storage;
    private final String name;
    private final long epoch;

    PlainEntryCopy(HadoopStorage storage, String name, long epoch) {
      this.storage = storage;
      this.name = name;
      this.epoch = epoch;
    }

    @Override
    public String write(byte[] content) {
      checkNotSuperseded();
      storage.create(name, ContentWriter.ofBytes(content));
      checkNotSuperseded();
      return name;
    }

    private void checkNotSuperseded() {
      for (FileInfo f : storage.list("")) {
        if (LogJournalFile.isName(f.name()) && LogJournalFile.epochOf(f.name()) > epoch) {
          throw new OutcomeUnknownException(
              describe()
                  + " was written while a newer writer took the log over ("
                  + f.name()
                  + "): two queries on one checkpoint?");
        }
      }
    }

    @Override
    public boolean discard(String written) {
      storage.delete(written);
      return true;
    }

    @Override
    public String describe() {
      return storage.describe() + "/" + name;
    }
  }
}
