package io.streamstate.spark.checkpoint;

import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.core.hedge.HedgeCopy;
import io.streamstate.core.hedge.JournalAppendCopy;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.hadoop.HadoopStorage;
import java.util.function.Consumer;

/**
 * The two copies of a hedged put to a {@link LogJournal} (docs/protocol.md, "Spark log journal"):
 * the append to the journal, and the entry as a plain file, written if the append is late.
 */
final class LogJournalCopies {
  private LogJournalCopies() {}

  /** The append of one put's records to one journal, as the primary copy of a hedged put. */
  static final class AppendCopy extends JournalAppendCopy<AppendableFile> {
    private final HadoopStorage storage;
    private final AppendableFile file;
    private final byte[] records;
    private final Consumer<AppendableFile> retire;

    AppendCopy(
        HadoopStorage storage,
        AppendableFile file,
        byte[] records,
        Consumer<AppendableFile> retire) {
      super(storage);
      this.storage = storage;
      this.file = file;
      this.records = records;
      this.retire = retire;
    }

    @Override
    public String write(byte[] content) {
      return file.name() + "@" + file.append(records);
    }

    @Override
    protected AppendableFile journal() {
      return file;
    }

    @Override
    protected AppendableFile fileOf(AppendableFile journal) {
      return journal;
    }

    /** Later entries go to the next journal (the hedge's file and it placed elsewhere on HDFS). */
    @Override
    protected void retire(AppendableFile late) {
      retire.accept(late);
    }

    @Override
    public String describe() {
      return storage.describe() + "/" + file.name() + " (append)";
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
