// The SVG plot writer: round ticks, logarithmic axes, legends that name what differs, bands.
#include "ropelab/util/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "../test_util.h"

using namespace ropelab;

namespace {

class Plot : public ropelab::testing::TempDir {
 protected:
  std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// The SVG of write_line_plot(series, options), written in the test's directory.
  std::string draw(const std::vector<Series>& series, const PlotOptions& options) {
    const auto path = (dir_ / "plot.svg").string();
    write_line_plot(path, series, options);
    return read(path);
  }
};

void expect_ticks(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size()) << ::testing::PrintToString(got);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9 * std::abs(want[i]) + 1e-12) << i;
}

/// The texts of the SVG's tick labels (those drawn beside the grid lines).
std::vector<std::string> texts(const std::string& svg) {
  std::vector<std::string> out;
  static const std::regex text(R"(<text[^>]*>([^<]*)</text>)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

bool has(const std::vector<std::string>& texts, const std::string& s) {
  return std::find(texts.begin(), texts.end(), s) != texts.end();
}

}  // namespace

TEST(PlotTicks, FallOnRoundNumbers) {
  // the committed ablation plot's axes had ticks at 1.171, 1.422, ... and 100, 280, 460, ...
  expect_ticks(nice_ticks(1.171, 2.427), {1.2, 1.4, 1.6, 1.8, 2.0, 2.2, 2.4});
  expect_ticks(nice_ticks(100, 1000), {200, 400, 600, 800, 1000});
  expect_ticks(nice_ticks(0, 1), {0, 0.2, 0.4, 0.6, 0.8, 1.0});
  expect_ticks(nice_ticks(-3, 7), {-2, 0, 2, 4, 6});
  expect_ticks(nice_ticks(0.0012, 0.0049), {0.002, 0.003, 0.004});
}

TEST(PlotTicks, LogAxesUseOneTwoFiveOrDecades) {
  expect_ticks(log_ticks(100, 3000), {100, 200, 500, 1000, 2000});
  expect_ticks(log_ticks(1, 1e5), {1, 10, 100, 1000, 1e4, 1e5});
  EXPECT_TRUE(log_ticks(0, 10).empty());
  expect_ticks(log_ticks(210, 260), {210, 220, 230, 240, 250, 260});  // no 1-2-5 step inside: linear ones
}

TEST(PlotLegend, NamesOnlyTheKeysThatDiffer) {
  auto [title, labels] = legend_labels({"model.position.type=learned", "model.position.type=rotary"});
  EXPECT_EQ(title, "model.position.type");
  EXPECT_EQ(labels, (std::vector<std::string>{"learned", "rotary"}));
  // a value with braces and commas stays one value; a key that is the same everywhere is dropped
  std::tie(title, labels) =
      legend_labels({"model.attention={type: performer, num_features: 128},model.position.type=a",
                     "model.attention={type: performer, num_features: 128},model.position.type=b"});
  EXPECT_EQ(title, "model.position.type");
  EXPECT_EQ(labels, (std::vector<std::string>{"a", "b"}));
  std::tie(title, labels) = legend_labels({"x={a: 1, b: 2},y=1", "x={a: 3, b: 4},y=2"});
  EXPECT_EQ(title, "x, y");
  EXPECT_EQ(labels, (std::vector<std::string>{"{a: 1, b: 2}, 1", "{a: 3, b: 4}, 2"}));
  // a mapping led by its type reads as the type, then the rest
  std::tie(title, labels) =
      legend_labels({"model.position={type: rotary}", "model.position={type: rotary, nope_every: 3}",
                     "model.position={type: alibi, x: {a: 1}}", "model.position={kind: 2}"});
  EXPECT_EQ(title, "model.position");
  EXPECT_EQ(labels, (std::vector<std::string>{"rotary", "rotary (nope_every: 3)", "alibi (x: {a: 1})", "{kind: 2}"}));
  // names of another form are kept
  std::tie(title, labels) = legend_labels({"train loss", "valid loss"});
  EXPECT_EQ(title, "");
  EXPECT_EQ(labels, (std::vector<std::string>{"train loss", "valid loss"}));
}

TEST_F(Plot, SvgHasTheLegendRoundTicksABandAndTheCaption) {
  Series a{"model.position.type=learned", {100, 200, 300}, {2.4, 1.9, 1.2}, {0.1, 0.05, 0.02}};
  Series b{"model.position.type=rotary", {100, 200, 300}, {2.3, 1.7, 1.171}, {}};
  PlotOptions options;
  options.title = "t";
  options.x_label = "step";
  options.y_label = "loss";
  options.caption = "ropelab ablate experiments/x.yaml -o runs/x";
  const auto svg = draw({a, b}, options);
  const auto t = texts(svg);
  EXPECT_TRUE(has(t, "model.position.type"));  // the legend's title
  EXPECT_TRUE(has(t, "learned"));
  EXPECT_TRUE(has(t, "rotary"));
  EXPECT_FALSE(has(t, "model.position.type=learned"));
  EXPECT_TRUE(has(t, "ropelab ablate experiments/x.yaml -o runs/x"));
  EXPECT_TRUE(has(t, "1.5") && has(t, "2") && has(t, "200")) << svg;  // round ticks
  EXPECT_FALSE(has(t, "1.171"));
  // one band: series a has spreads, b none
  size_t bands = 0;
  for (size_t at = svg.find("class=\"band\""); at != std::string::npos; at = svg.find("class=\"band\"", at + 1))
    ++bands;
  EXPECT_EQ(bands, 1u);
  // the legend fits: the canvas is wider than the longest label needs
  std::smatch width;
  ASSERT_TRUE(std::regex_search(svg, width, std::regex(R"re(width="([0-9.]+)")re")));
  EXPECT_GE(std::stod(width[1]), 560 + 7.0 * std::string("model.position.type").size());
}

// A marked x (the training length): a dashed line inside the axes with its label, the x
// range stretched to hold it; labels given as they are take the legend title asked for.
TEST_F(Plot, AMarkedLengthIsDrawnAndHeldByTheAxis) {
  Series a{"alibi", {256, 512, 1024}, {3.0, 3.1, 3.2}, {}};
  Series b{"rotary + yarn", {256, 512, 1024}, {3.0, 5.0, 9.0}, {}};
  PlotOptions options;
  options.log_x = true;
  options.x_mark = 128;
  options.x_mark_label = "trained at 128";
  options.legend_title = "model.position.type (+ at evaluation)";
  const auto svg = draw({a, b}, options);
  const auto t = texts(svg);
  EXPECT_TRUE(has(t, "trained at 128"));
  EXPECT_TRUE(has(t, "rotary + yarn"));
  EXPECT_TRUE(has(t, "model.position.type (+ at evaluation)"));
  std::smatch mark, frame;
  ASSERT_TRUE(std::regex_search(svg, mark, std::regex(R"re(class="mark" x1="([0-9.]+)")re")));
  ASSERT_TRUE(std::regex_search(svg, frame, std::regex(R"re(<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)")re")));
  const double x = std::stod(mark[1]), left = std::stod(frame[1]), right = left + std::stod(frame[2]);
  EXPECT_GT(x, left);
  EXPECT_LT(x, left + 0.25 * (right - left));  // 128 is the axis' smallest value, before 256
  // no mark asked: no line
  EXPECT_EQ(draw({a, b}, PlotOptions()).find("class=\"mark\""), std::string::npos);
}

// Past ten series the colours repeat: each further round is dashed, and the canvas grows
// to hold the legend.
TEST_F(Plot, ManySeriesStayTellableApart) {
  std::vector<Series> series;
  for (int k = 0; k < 24; ++k) series.push_back({"variant=" + std::to_string(k), {1, 2}, {1.0 + k, 2.0 + k}, {}});
  const auto svg = draw(series, PlotOptions());
  std::vector<std::string> strokes;  // each line's colour and dashes, in order
  const std::regex line(R"re(<polyline fill="none" stroke="([^"]+)"( stroke-dasharray="[^"]+")?)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator(); ++it)
    strokes.push_back((*it)[1].str() + (*it)[2].str());
  ASSERT_EQ(strokes.size(), 24u);
  EXPECT_EQ(std::set<std::string>(strokes.begin(), strokes.end()).size(), 24u);  // no two alike
  EXPECT_EQ(strokes[0].find("dasharray"), std::string::npos);
  EXPECT_NE(strokes[10].find("dasharray"), std::string::npos);
  std::smatch height, last;
  ASSERT_TRUE(std::regex_search(svg, height, std::regex(R"re(height="([0-9.]+)")re")));
  ASSERT_TRUE(std::regex_search(svg, last, std::regex(R"re(<text x="[0-9.]+" y="([0-9.]+)">23</text>)re"))) << svg;
  EXPECT_LT(std::stod(last[1]), std::stod(height[1]) - 20);  // the last legend entry on the canvas
}

TEST_F(Plot, LogAxesPlaceDecadesEvenly) {
  Series s{"ppl", {128, 256, 512, 1024, 2048}, {5, 7, 20, 90, 400}, {}};
  PlotOptions options;
  options.log_x = options.log_y = true;
  const auto svg = draw({s}, options);
  const auto t = texts(svg);
  EXPECT_TRUE(has(t, "200") && has(t, "500") && has(t, "1000") && has(t, "2000")) << svg;
  EXPECT_TRUE(has(t, "10") && has(t, "100")) << svg;
  EXPECT_NE(svg.find("(log scale)"), std::string::npos);
  // equal ratios are equal distances: the polyline's x steps between 128, 256, 512 are equal
  std::smatch points;
  ASSERT_TRUE(std::regex_search(svg, points, std::regex(R"re(<polyline[^>]*points="([^"]*)")re")));
  std::istringstream in(points[1].str());
  std::vector<double> xs;
  for (std::string p; in >> p;) xs.push_back(std::stod(p.substr(0, p.find(','))));
  ASSERT_EQ(xs.size(), 5u);
  EXPECT_NEAR(xs[1] - xs[0], xs[2] - xs[1], 1e-3);  // the SVG holds 6 digits
  EXPECT_NEAR(xs[4] - xs[3], xs[1] - xs[0], 1e-3);
}

TEST_F(Plot, HeatMapShadesEachCellAndMarksMissingOnes) {
  const auto path = (dir_ / "heat.svg").string();
  write_heat_map(path, {"128", "256"}, {"0%", "100%"}, {{1.0, 0.25}, {0.0, std::nan("")}}, {"t", "x", "y", "c"});
  const auto svg = ropelab::testing::read_text(path);
  EXPECT_NE(svg.find("fill=\"#08306b\""), std::string::npos) << svg;  // 1: darkest
  EXPECT_NE(svg.find("fill=\"#ffffff\""), std::string::npos) << svg;  // 0: white
  EXPECT_NE(svg.find("fill=\"#cccccc\""), std::string::npos) << svg;  // missing: grey
  EXPECT_NE(svg.find(">n/a<"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">0.25<"), std::string::npos) << svg;
  EXPECT_THROW(write_heat_map(path, {"128"}, {"0%"}, {{1.0, 2.0}}, {}), std::invalid_argument);
}

// Small multiples: each panel has its title, its own legend and the same axes, so that a
// line's height compares across panels.
TEST_F(Plot, PanelsShareTheirAxes) {
  Panel flat{"flat",
             {{"model.position.type=alibi", {128, 1024}, {3.0, 3.1}, {}},
              {"model.position.type=kerple", {128, 1024}, {3.2, 3.3}, {}}}};
  Panel steep{"steep", {{"model.position.type=rotary", {128, 1024}, {3.0, 40.0}, {}}}};
  PlotOptions options;
  options.log_x = options.log_y = true;
  const auto path = (dir_ / "panels.svg").string();
  write_line_panels(path, {flat, steep}, options);
  const auto svg = read(path);
  const auto t = texts(svg);
  auto count = [&](const std::string& s) { return std::count(t.begin(), t.end(), s); };
  EXPECT_EQ(count("flat"), 1);
  EXPECT_EQ(count("steep"), 1);
  EXPECT_EQ(count("alibi") + count("kerple"), 2);     // the first panel's legend
  EXPECT_EQ(count("model.position.type=rotary"), 1);  // one series: no key differs, the name stays
  EXPECT_EQ(count("20"), 2);                          // a y tick of the steep line's range, in both panels
  std::vector<double> heights;
  const std::regex frame(R"re(<rect x="[0-9.]+" y="[0-9.]+" width="[0-9.]+" height="([0-9.]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), frame); it != std::sregex_iterator(); ++it)
    heights.push_back(std::stod((*it)[1]));
  ASSERT_EQ(heights.size(), 2u);
  EXPECT_EQ(heights[0], heights[1]);  // frames of one size
}

// A plot is replaced whole or not at all: a disk that fills while it is written (its
// temporary file is /dev/full here) names the plot and leaves the old one in place.
TEST_F(Plot, APlotThatCannotBeWrittenLeavesTheOldOne) {
  const auto path = (dir_ / "plot.svg").string();
  const auto before = draw({Series{"a", {1, 2}, {3, 4}, {}}}, PlotOptions());
  std::filesystem::create_symlink("/dev/full", path + ".tmp");
  EXPECT_EQ(ropelab::testing::error_of([&] {
              write_line_plot(path, {Series{"b", {1, 2}, {5, 6}, {}}}, PlotOptions());
            }),
            path + ": cannot write plot (disk full?): No space left on device");
  EXPECT_EQ(read(path), before);
}
