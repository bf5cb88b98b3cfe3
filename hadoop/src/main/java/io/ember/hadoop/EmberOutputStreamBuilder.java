package io.ember.hadoop;

import io.ember.protocol.StorageClass;
import java.io.IOException;
import java.util.Set;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.Path;

/**
 * {@code createFile(path)} for Ember: takes {@value EmberFileSystem#STORAGE_CLASS_KEY} as an option
 * ({@code opt} or {@code must}); a {@code must} of any other key fails.
 */
final class EmberOutputStreamBuilder
    extends FSDataOutputStreamBuilder<FSDataOutputStream, EmberOutputStreamBuilder> {
  private final EmberFileSystem fs;

  EmberOutputStreamBuilder(EmberFileSystem fs, Path path) {
    super(fs, path);
    this.fs = fs;
  }

  @Override
  public EmberOutputStreamBuilder getThisBuilder() {
    return this;
  }

  @Override
  public FSDataOutputStream build() throws IOException {
    rejectUnknownMandatoryKeys(
        Set.of(EmberFileSystem.STORAGE_CLASS_KEY),
        "Ember's createFile() knows only " + EmberFileSystem.STORAGE_CLASS_KEY);
    String sc = getOptions().get(EmberFileSystem.STORAGE_CLASS_KEY);
    StorageClass storageClass;
    try {
      storageClass = sc == null ? fs.defaultStorageClass() : StorageClass.parse(sc);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(EmberFileSystem.STORAGE_CLASS_KEY + ": " + e.getMessage());
    }
    boolean overwrite = getFlags().contains(CreateFlag.OVERWRITE);
    if (getFlags().contains(CreateFlag.APPEND)) {
      throw new UnsupportedOperationException(
          "Ember does not support append: files are written once");
    }
    return fs.create(getPath(), overwrite, isRecursive(), storageClass, getPermission());
  }
}
