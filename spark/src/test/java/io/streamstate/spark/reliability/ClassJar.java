package io.streamstate.spark.reliability;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;

/** A jar of a few test classes, for executor JVMs that do not have the test class path. */
final class ClassJar {
  private ClassJar() {}

  /** Writes {@code jar} holding the class files of {@code classes}; returns it. */
  static Path write(Path jar, Class<?>... classes) throws IOException {
    Files.createDirectories(jar.getParent());
    try (OutputStream out = Files.newOutputStream(jar);
        JarOutputStream jarOut = new JarOutputStream(out)) {
      for (Class<?> c : classes) {
        String entry = c.getName().replace('.', '/') + ".class";
        try (InputStream in = c.getResourceAsStream("/" + entry)) {
          if (in == null) {
            throw new IOException("No class file " + entry + " for " + c.getName());
          }
          jarOut.putNextEntry(new JarEntry(entry));
          in.transferTo(jarOut);
          jarOut.closeEntry();
        }
      }
    }
    return jar;
  }
}
