package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.dram.DramDataNode;
import io.ember.http.Page;
import io.ember.protocol.BlockLocation;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jsoup.Jsoup;
import org.jsoup.nodes.Document;
import org.jsoup.nodes.Element;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.NoSuchElementException;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebDriverException;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The name node's status page in a real browser: Debian's headless Chromium, driven by Selenium
 * through Debian's chromium-driver, with JavaScript switched off (the page must not need it). The
 * screenshots are left in {@code target/browser-screenshots} for a person to look at.
 */
class BrowserStatusPageTest {
  private static final Path CHROMEDRIVER =
      Path.of(System.getenv().getOrDefault("EMBER_TEST_CHROMEDRIVER", "/usr/bin/chromedriver"));
  private static final Path CHROMIUM =
      Path.of(System.getenv().getOrDefault("EMBER_TEST_CHROMIUM", "/usr/bin/chromium"));
  private static final Path SCREENSHOTS = Path.of("target", "browser-screenshots");

  /** Long enough for a lost heartbeat and two of the page's own 5 s refreshes on a busy machine. */
  private static final Duration DEADLINE = Duration.ofMinutes(2);

  private MiniCluster cluster;
  private EmberClient client;
  private WebDriver browser;
  private String base;

  @BeforeEach
  void start(@TempDir Path profile) throws Exception {
    Assumptions.assumeTrue(
        Files.isExecutable(CHROMEDRIVER) && Files.isExecutable(CHROMIUM),
        "no headless browser: install Debian's chromium and chromium-driver (.ci/run does), or"
            + " point EMBER_TEST_CHROMIUM and EMBER_TEST_CHROMEDRIVER at them");
    cluster = MiniCluster.builder().dramDatanodes(2).dramCapacity("16m").blockSize("1m").build();
    client = cluster.newClient();
    base = "http://127.0.0.1:" + cluster.namenode().httpAddress().getPort();

    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments(
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--user-data-dir=" + profile);
    // The page must work for a reader with scripts off, so the test reads it that way.
    options.setExperimentalOption(
        "prefs", Map.of("profile.managed_default_content_settings.javascript", 2));
    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(new File(CHROMEDRIVER.toString()))
            .usingAnyFreePort()
            .build();
    browser = new ChromeDriver(service, options);
    browser.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(60));
    Files.createDirectories(SCREENSHOTS);
  }

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.quit();
    }
    if (client != null) {
      client.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void thePageListsTheDataNodesFollowsAFileToItsBlocksAndShowsAKilledNodeLost() throws Exception {
    browser.get(base + "/");
    assertTrue(browser.getTitle().startsWith("Ember name node"), browser.getTitle());
    // The page reloads itself every 5 s: what is read of it is read whole, again if a reload
    // replaced it meanwhile.
    Map<String, List<String>> rows =
        patiently(
            b -> {
              Map<String, List<String>> read = dataNodeRows();
              return read.size() == cluster.datanodes().size() ? read : null;
            });
    assertEquals(2, rows.size(), rows.toString());
    for (DramDataNode dn : cluster.datanodes()) {
      List<String> row = rows.get(dn.endpoint());
      assertTrue(row != null, dn.endpoint() + " in " + rows);
      assertEquals("live", row.get(1));
      assertEquals(Page.bytes(dn.capacity()), row.get(5), "capacity of " + dn.endpoint());
    }
    screenshot("1-status");

    try (EmberOutputStream out =
        client.create("/logs/day one", CreateOptions.DEFAULT.withCreateParents(true))) {
      out.write(TestFiles.data((2 << 20) + 7, 7));
    }
    // As a person would: through the links, not by typing addresses.
    patiently(
        b -> {
          b.findElement(By.linkText("Browse")).click();
          // Missing when the page's own reload beat the click: click Browse again.
          b.findElement(By.linkText("logs/")).click();
          return true;
        });
    browser.findElement(By.linkText("day one")).click();
    List<BlockLocation> blocks = client.blockLocations("/logs/day one");
    List<List<String>> shown = tableAfter("blocks");
    assertEquals(blocks.size(), shown.size(), shown.toString());
    for (int i = 0; i < blocks.size(); i++) {
      assertEquals(Long.toString(blocks.get(i).blockId()), shown.get(i).get(1));
      assertEquals(blocks.get(i).endpoint(), shown.get(i).get(3));
      assertEquals("available", shown.get(i).get(6));
    }
    assertEquals(List.of("1048576", "1048576", "7"), shown.stream().map(r -> r.get(5)).toList());
    screenshot("2-file-blocks");

    // The namespace pages do not reload themselves.
    browser.findElement(By.linkText("Status")).click();
    String killed = cluster.datanodes().get(0).endpoint();
    cluster.killDatanode(0);
    // Nothing reloads the page but its own refresh: the state must turn without a click.
    new WebDriverWait(browser, DEADLINE, Duration.ofMillis(200))
        .withMessage(killed + " to be shown lost without a reload by the test")
        .ignoring(NoSuchElementException.class)
        .until(b -> "lost".equals(stateOf(killed)));
    List<List<String>> warnings =
        patiently(
            b -> {
              // Read again until the refresh that shows the loss has come: an older table is
              // complete too.
              List<List<String>> read = tableAfter("last-warnings");
              return read.stream()
                      .anyMatch(w -> w.get(1).contains(killed) && w.get(1).contains("lost"))
                  ? read
                  : null;
            });
    assertTrue(
        warnings.stream().anyMatch(w -> w.get(1).contains(killed) && w.get(1).contains("lost")),
        "a warning names the lost node: " + warnings);
    screenshot("3-lost");
  }

  /** {@code read}'s answer, read again while a reload of the page spoils it, up to the deadline. */
  private <T> T patiently(Function<WebDriver, T> read) {
    return new WebDriverWait(browser, DEADLINE, Duration.ofMillis(200))
        .ignoring(StaleElementReferenceException.class)
        .ignoring(NoSuchElementException.class)
        .until(b -> replacedPageIsStale(() -> read.apply(b)));
  }

  /**
   * {@code action}'s answer; Chromium's own word for an element whose page a reload replaced
   * between finding it and using it becomes the stale-element exception it means, so that only a
   * browser that really failed fails the test at once.
   */
  private static <T> T replacedPageIsStale(Supplier<T> action) {
    try {
      return action.get();
    } catch (WebDriverException e) {
      String message = String.valueOf(e.getMessage());
      if (!(e instanceof StaleElementReferenceException)
          && !(e instanceof NoSuchElementException)
          && (message.contains("does not belong to the document")
              || message.contains("No node with given id"))) {
        throw new StaleElementReferenceException("the page was replaced while it was used", e);
      }
      throw e;
    }
  }

  private String stateOf(String endpoint) {
    List<String> row = dataNodeRows().get(endpoint);
    return row == null ? null : row.get(1);
  }

  /** The data-node table's rows, by address. */
  private Map<String, List<String>> dataNodeRows() {
    Map<String, List<String>> byAddress = new HashMap<>();
    for (List<String> row : tableAfter("data-nodes")) {
      byAddress.put(row.get(2), row);
    }
    return byAddress;
  }

  /**
   * The cells' text of the table that follows the heading with id {@code headingId}, read from one
   * serialisation of the whole page: the page reloads itself, and elements looked up one call at a
   * time can come from two documents.
   *
   * @throws NoSuchElementException if the page has no such heading or no table after it
   */
  private List<List<String>> tableAfter(String headingId) {
    Document page = Jsoup.parse(browser.getPageSource());
    Element heading = page.getElementById(headingId);
    Element table =
        heading == null
            ? null
            : heading.nextElementSiblings().stream()
                .filter(e -> e.tagName().equals("table"))
                .findFirst()
                .orElse(null);
    if (table == null) {
      throw new NoSuchElementException(
          "no table after heading '" + headingId + "' on '" + page.title() + "'");
    }
    List<List<String>> rows = new ArrayList<>();
    for (Element tr : table.select("tr:has(> td)")) {
      List<String> cells = tr.select("> td").stream().map(Element::text).toList();
      // A page serialised while its refresh was still arriving can end in a cut-off row: a
      // settled table's rows all have the same cells.
      if (!rows.isEmpty() && cells.size() != rows.get(0).size()) {
        throw new NoSuchElementException("table '" + headingId + "' was read while it loaded");
      }
      rows.add(cells);
    }
    return rows;
  }

  private void screenshot(String name) throws IOException {
    byte[] png = ((ChromeDriver) browser).getScreenshotAs(OutputType.BYTES);
    Files.write(SCREENSHOTS.resolve(name + ".png"), png);
  }
}
