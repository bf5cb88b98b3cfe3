package io.ember.cli;

import io.ember.benchmarks.OptionValues;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.minicluster.MiniCluster;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.Messages.DirEntry;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.zip.CRC32C;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ember local}: a name node, a DRAM data node and an NVMf data node (over an embedded
 * NVMe/TCP target) in this process on loopback; with {@code --demo}, writes, lists and reads back a
 * few files, verifies them, and exits.
 */
@Command(
    name = "local",
    mixinStandardHelpOptions = true,
    description =
        "Run a local cluster (name node, DRAM data node, NVMf data node over an embedded"
            + " NVMe/TCP target) on loopback until Ctrl-C; "
            + "--demo writes and reads a few files and exits.")
final class LocalCommand implements Callable<Integer> {
  @Mixin ConfigOptions options;

  @Option(names = "--demo", description = "run a short demo against the cluster, then exit")
  boolean demo;

  @Option(names = "--port", description = "name node port (default 9060; 0: any free port)")
  Integer port;

  @Option(names = "--capacity", description = "DRAM data node capacity (default 256m)")
  String capacity = "256m";

  @Option(
      names = "--nvmf-size",
      description = "size of the NVMf data node's embedded target (default 1g; 0: no NVMf tier)")
  String nvmfSize = "1g";

  @Option(
      names = "--nvmf-file",
      paramLabel = "FILE",
      description = "file backing the embedded target (default: a temporary file, removed on exit)")
  java.nio.file.Path nvmfFile;

  @Option(
      names = "--namenode-dir",
      paramLabel = "DIR",
      description =
          "keep the name node's namespace in DIR across runs (default: a temporary directory,"
              + " removed on exit); formatted on first use")
  java.nio.file.Path namenodeDir;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    EmberConfig config = options.load();
    int nnPort = port != null ? port : config.get(NameNodeKeys.PORT);
    MiniCluster.Builder builder =
        MiniCluster.builder()
            .realTimeouts()
            .config(config)
            .namenodePort(nnPort)
            .set(DramDataNodeKeys.CAPACITY, capacity)
            .set(
                EmberKeys.IO_THREADS,
                config.isSet(EmberKeys.IO_THREADS)
                    ? config.get(EmberKeys.IO_THREADS).toString()
                    : "0");
    if (namenodeDir != null) {
      builder.set(NameNodeKeys.DIR, namenodeDir.toString());
    }
    // 0 turns the tier off; otherwise the range of NvmfDataNodeKeys.EMBEDDED_SIZE, checked here
    // so that the error names the option rather than the key it sets.
    long nvmfBytes = OptionValues.size(spec, "--nvmf-size", nvmfSize, 0, 1L << 44);
    if (nvmfBytes > 0 && nvmfBytes < (1L << 20)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--nvmf-size: " + nvmfSize + " is less than 1m (0: no NVMf tier)");
    }
    boolean nvmf = nvmfBytes > 0;
    java.nio.file.Path backing = nvmfFile;
    if (nvmf) {
      if (backing == null) {
        backing = java.nio.file.Files.createTempFile("ember-local-nvmf-", ".img");
        backing.toFile().deleteOnExit();
      }
      builder
          .set(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_FILE, backing.toString())
          .set(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_SIZE, nvmfSize)
          .nvmfDatanode("");
    }
    try (MiniCluster cluster = builder.build()) {
      out.println(
          "Ember local cluster: name node listening on "
              + cluster.namenodeAddress()
              + (namenodeDir != null ? " (namespace kept in " + namenodeDir + ")" : "")
              + ", 1 DRAM data node ("
              + capacity
              + ") at "
              + cluster.datanodes().get(0).endpoint()
              + (nvmf
                  ? ", 1 NVMf data node ("
                      + nvmfSize
                      + ", embedded NVMe/TCP target at "
                      + cluster.nvmfDatanodes().get(0).target()
                      + " on "
                      + backing
                      + ")"
                  : ""));
      if (cluster.namenode().httpUrl() != null) {
        out.println("Status pages and metrics: " + cluster.namenode().httpUrl());
      }
      out.flush();
      if (demo) {
        runDemo(cluster, out, nvmf);
        return 0;
      }
      UntilStopped.run(
          cluster,
          out,
          "Try: bin/ember fs --namenode " + cluster.namenodeAddress() + " ls /\nCtrl-C stops.");
    }
    return 0;
  }

  private static void runDemo(MiniCluster cluster, PrintWriter out, boolean nvmf) throws Exception {
    try (EmberClient client = cluster.newClient()) {
      client.createDirectory("/demo", true);
      byte[] hello = "Hello from Ember!\n".getBytes(StandardCharsets.UTF_8);
      try (EmberOutputStream o = client.create("/demo/hello.txt", CreateOptions.DEFAULT)) {
        o.write(hello);
      }
      out.println("wrote /demo/hello.txt (" + hello.length + " bytes)");

      byte[] big = new byte[8 << 20];
      new Random(42).nextBytes(big);
      long written = checksum(big);
      long t0 = System.nanoTime();
      try (EmberOutputStream o = client.create("/demo/random-8m.bin", CreateOptions.DEFAULT)) {
        o.write(big);
      }
      long t1 = System.nanoTime();
      out.printf(
          "wrote /demo/random-8m.bin (8 MiB in %.1f ms, crc32c %08x)%n", (t1 - t0) / 1e6, written);

      client.createMultiFile("/demo/shuffle", CreateOptions.DEFAULT);
      Thread[] writers = new Thread[4];
      Exception[] errors = new Exception[4];
      for (int w = 0; w < writers.length; w++) {
        int id = w;
        writers[w] =
            new Thread(
                () -> {
                  try (EmberOutputStream o =
                      client.createBuffered("/demo/shuffle/map-" + id, CreateOptions.DEFAULT)) {
                    for (int i = 0; i < 1000; i++) {
                      o.write(
                          ("map " + id + " record " + i + "\n").getBytes(StandardCharsets.UTF_8));
                    }
                  } catch (Exception e) {
                    errors[id] = e;
                  }
                });
        writers[w].start();
      }
      for (Thread t : writers) {
        t.join();
      }
      for (Exception e : errors) {
        if (e != null) {
          throw e;
        }
      }
      out.println("wrote multifile /demo/shuffle with 4 concurrent writers");

      if (nvmf) {
        byte[] onNvmf = new byte[3 << 20];
        new Random(7).nextBytes(onNvmf);
        CreateOptions nvmfOptions =
            CreateOptions.DEFAULT.withStorageClass(io.ember.protocol.StorageClass.NVMF);
        try (EmberOutputStream o = client.createBuffered("/demo/on-nvmf.bin", nvmfOptions)) {
          o.write(onNvmf, 0, 1000); // unaligned pieces: the tier reads, patches, writes sectors
          o.write(onNvmf, 1000, onNvmf.length - 1000);
        }
        byte[] back;
        try (InputStream in = client.open("/demo/on-nvmf.bin")) {
          back = in.readAllBytes();
        }
        boolean same = java.util.Arrays.equals(onNvmf, back);
        out.println(
            "wrote and read /demo/on-nvmf.bin (3 MiB on NVMf, over NVMe/TCP): "
                + (same ? "matches" : "MISMATCH"));
        if (!same) {
          throw new IllegalStateException("NVMf demo read back different data than it wrote");
        }
      }
      out.println("ls /demo:");
      for (DirEntry e : client.list("/demo")) {
        out.println("  " + FsCommand.Ls.line("/demo/" + e.name(), e.status()));
      }
      try (InputStream in = client.open("/demo/hello.txt")) {
        out.print("cat /demo/hello.txt: " + new String(in.readAllBytes(), StandardCharsets.UTF_8));
      }
      long t2 = System.nanoTime();
      byte[] back;
      try (InputStream in = client.open("/demo/random-8m.bin")) {
        back = in.readAllBytes();
      }
      long t3 = System.nanoTime();
      long read = checksum(back);
      out.printf(
          "read /demo/random-8m.bin (%d bytes in %.1f ms, crc32c %08x): %s%n",
          back.length, (t3 - t2) / 1e6, read, read == written ? "matches" : "MISMATCH");
      long lines;
      try (InputStream in = client.openMultiFile("/demo/shuffle")) {
        lines = new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().count();
      }
      out.println("read multifile /demo/shuffle: " + lines + " records (expected 4000)");
      for (ClassUsage u : client.df()) {
        out.printf(
            "df %s: %d of %d blocks used (%d live node(s))%n",
            u.storageClass().displayName(),
            u.totalBlocks() - u.freeBlocks(),
            u.totalBlocks(),
            u.liveNodes());
      }
      client.delete("/demo", true);
      out.println("deleted /demo; demo done.");
      out.flush();
      if (read != written || lines != 4000) {
        throw new IllegalStateException("demo read back different data than it wrote");
      }
    }
  }

  private static long checksum(byte[] b) {
    CRC32C c = new CRC32C();
    c.update(b);
    return c.getValue();
  }
}
