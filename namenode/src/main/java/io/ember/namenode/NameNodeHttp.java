package io.ember.namenode;

import io.ember.http.Page;
import io.ember.http.ServerMetrics;
import io.ember.http.StatusServer;
import io.ember.http.StatusServer.NotFoundException;
import io.ember.http.StatusServer.Response;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.Messages;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.Paths;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The name node's pages: the cluster's status, a namespace browser, the same as JSON under {@code
 * /api/}, and {@code /metrics}.
 */
final class NameNodeHttp {
  /** Entries a directory page or {@code /api/list} shows at most. */
  static final int LIST_LIMIT = 1000;

  /** Blocks a file page or {@code /api/file} shows at most. */
  static final int BLOCK_LIMIT = 1000;

  private static final int REFRESH_SECONDS = 5;
  private static final List<String[]> NAV =
      List.of(
          new String[] {"Status", "/"},
          new String[] {"Browse", "/browse?path=/"},
          new String[] {"JSON", "/api/cluster"},
          new String[] {"Metrics", "/metrics"});

  private final NameNodeState state;
  private final String rpcAddress;
  private final String journal;
  private final Instant started = Instant.now();

  /**
   * Whom the namespace browser reads as: over plain HTTP nobody is authenticated, so on a cluster
   * with permissions it sees what is open to all.
   */
  private final Caller browser;

  NameNodeHttp(NameNodeState state, String rpcAddress, String journal, Caller browser) {
    this.state = state;
    this.browser = browser;
    this.rpcAddress = rpcAddress;
    this.journal = journal;
  }

  Map<String, StatusServer.Route> routes(ServerMetrics metrics) {
    Map<String, StatusServer.Route> routes = new LinkedHashMap<>();
    routes.put("/", q -> statusPage());
    routes.put("/browse", this::browsePage);
    routes.put("/api/cluster", q -> Page.json(state.report()));
    routes.put("/api/datanodes", q -> Page.json(state.report().datanodes()));
    routes.put("/api/events", q -> Page.json(state.recentEvents()));
    routes.put("/api/list", q -> Page.json(list(path(q))));
    routes.put("/api/file", q -> Page.json(file(path(q))));
    routes.put("/metrics", metrics.route());
    return routes;
  }

  private Response statusPage() {
    ClusterReport r = state.report();
    Page page = new Page("Ember name node " + rpcAddress, REFRESH_SECONDS, NAV);
    page.paragraph(
        "Up since "
            + started
            + "; journal: "
            + journal
            + "; "
            + r.files()
            + " files, "
            + r.openFiles()
            + " open by "
            + r.writers()
            + " writers. This page refreshes every "
            + REFRESH_SECONDS
            + " s.");
    page.heading("Storage classes");
    List<List<String>> classes = new ArrayList<>();
    for (ClusterReport.ClassRow c : r.classes()) {
      classes.add(
          List.of(
              c.storageClass(),
              Integer.toString(c.liveNodes()),
              Integer.toString(c.lostNodes()),
              Page.bytes(c.capacityBytes()),
              Page.bytes(c.usedBytes()),
              Page.bytes(c.freeBytes()),
              percent(c.usedBytes(), c.capacityBytes())));
    }
    page.table(List.of("class", "live", "lost", "capacity", "used", "free", "use"), classes);
    page.heading("Data nodes");
    List<List<Object>> nodes = new ArrayList<>();
    for (Messages.DatanodeInfo d : r.datanodes()) {
      nodes.add(
          List.of(
              Integer.toString(d.id()),
              Page.styled(d.state(), cssOf(d.state())),
              d.endpoint(),
              d.storageClass().displayName(),
              d.tier(),
              Page.bytes(d.capacityBytes()),
              Page.bytes(d.usedBytes()),
              percent(d.usedBytes(), d.capacityBytes()),
              String.format(Locale.ROOT, "%.1f s ago", d.lastHeartbeatMillisAgo() / 1000.0),
              Integer.toString(d.trimmingBlocks()),
              Integer.toString(d.overwrittenBlocks())));
    }
    page.table(
        List.of(
            "id",
            "state",
            "address",
            "class",
            "tier",
            "capacity",
            "used",
            "use",
            "last heartbeat",
            "trimming",
            "overwritten"),
        nodes);
    page.heading("Last warnings");
    List<RecentEvents.Event> events = state.recentEvents();
    if (events.isEmpty()) {
      page.paragraph("None since the name node started.");
    } else {
      List<List<Object>> rows = new ArrayList<>();
      for (int i = events.size() - 1; i >= 0; i--) {
        rows.add(List.of(events.get(i).time(), events.get(i).message()));
      }
      page.table(List.of("time", "warning"), rows);
    }
    return page.done();
  }

  private Response browsePage(QueryStringDecoder q) throws NotFoundException, EmberException {
    String path = path(q);
    NodeStatus status = lookup(path);
    Page page = new Page(path, 0, NAV);
    if (!path.equals("/")) {
      String parent = Paths.parent(path);
      page.raw("<p>" + Page.anchor("up to " + parent, browse(parent)) + "</p>\n");
    }
    if (status.type() == NodeType.DIRECTORY) {
      Messages.ListResponse listed = list(path);
      List<List<Object>> rows = new ArrayList<>();
      for (Messages.DirEntry e : listed.entries()) {
        String child = Paths.child(path, e.name());
        NodeStatus s = e.status();
        boolean dir = s.type() == NodeType.DIRECTORY;
        rows.add(
            List.of(
                Page.link(e.name() + (dir ? "/" : ""), browse(child)),
                dir ? "directory" : s.open() ? "file (open)" : "file",
                dir ? "" : Page.bytes(s.length()),
                dir ? "" : Integer.toString(s.blockCount()),
                dir ? "" : s.storageClass().displayName(),
                Instant.ofEpochMilli(s.modificationTime()).toString()));
      }
      page.table(List.of("name", "type", "length", "blocks", "class", "modified"), rows);
      if (listed.more()) {
        page.paragraph("Only the first " + LIST_LIMIT + " entries are shown.");
      }
    } else {
      Messages.OpenResponse file = file(path);
      NodeStatus s = file.status();
      page.paragraph(
          s.length()
              + " bytes in "
              + s.blockCount()
              + " blocks of "
              + Page.bytes(s.blockSize())
              + ", storage class "
              + s.storageClass().displayName()
              + (s.open() ? "; open for writing by " + s.leaseHolder() : "; closed")
              + ", modified "
              + Instant.ofEpochMilli(s.modificationTime()));
      List<List<Object>> rows = new ArrayList<>();
      for (BlockLocation b : file.blocks()) {
        rows.add(
            List.of(
                Integer.toString(b.index()),
                Long.toString(b.blockId()),
                Integer.toString(b.datanodeId()),
                b.endpoint(),
                b.tier(),
                // The location carries the block's size; the reader wants what the block holds.
                Long.toString(
                    Math.max(0, Math.min(b.length(), s.length() - (long) b.index() * b.length()))),
                b.lost() ? Page.styled("lost", "lost") : Page.styled("available", "live")));
      }
      page.heading("Blocks");
      page.table(List.of("index", "block", "data node", "address", "tier", "bytes", "state"), rows);
      if (file.blocks().size() < s.blockCount()) {
        page.paragraph("Only the first " + file.blocks().size() + " blocks are shown.");
      }
    }
    return page.done();
  }

  private static String browse(String path) {
    return "/browse?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8);
  }

  private static String path(QueryStringDecoder q) throws NotFoundException {
    List<String> values = q.parameters().get("path");
    String path = values == null || values.isEmpty() ? "/" : values.get(0);
    try {
      return Paths.normalize(path);
    } catch (EmberException e) {
      throw new NotFoundException(e.getMessage());
    }
  }

  private NodeStatus lookup(String path) throws NotFoundException, EmberException {
    try {
      return state.lookup(browser, path);
    } catch (EmberException e) {
      throw notFound(e);
    }
  }

  private Messages.ListResponse list(String path) throws NotFoundException, EmberException {
    try {
      return state.list(browser, path, "", LIST_LIMIT);
    } catch (EmberException e) {
      throw notFound(e);
    }
  }

  private Messages.OpenResponse file(String path) throws NotFoundException, EmberException {
    try {
      return state.open(browser, path, BLOCK_LIMIT);
    } catch (EmberException e) {
      throw notFound(e);
    }
  }

  private static NotFoundException notFound(EmberException e) throws EmberException {
    return switch (e.code()) {
      case NOT_FOUND,
          PARENT_NOT_FOUND,
          NOT_A_DIRECTORY,
          NOT_A_FILE,
          INVALID_PATH,
          PERMISSION_DENIED ->
          new NotFoundException(e.getMessage());
      default -> throw e;
    };
  }

  private static String percent(long part, long whole) {
    return whole == 0 ? "" : Math.round(100.0 * part / whole) + " %";
  }

  private static String cssOf(String state) {
    return switch (state) {
      case "live" -> "live";
      case "lost" -> "lost";
      default -> "other";
    };
  }
}
