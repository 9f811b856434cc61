package io.streamstate.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/** The command's version, as the build recorded it. */
public final class Versions implements IVersionProvider {
  @Override
  public String[] getVersion() {
    Properties p = new Properties();
    try (InputStream in = Versions.class.getResourceAsStream("version.properties")) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      // no version recorded
    }
    return new String[] {"streamstate " + p.getProperty("version", "(unknown version)")};
  }
}
