// The negative corpus: every file breaks one rule and must fail with that rule's own error,
// naming the file. tools/make_safetensors_negative_corpus.py writes the corpus.
#include <gtest/gtest.h>

#include <set>

#include "io/json.h"
#include "io/safetensors.h"
#include "test_paths.h"

namespace sft {

namespace {

const std::string kCorpus = "tests/fixtures/safetensors_bad/";

template <typename Open>
void expect_rejected(const std::string& path, const std::string& rule, Open open) {
  SCOPED_TRACE(path);
  try {
    open(path);
    ADD_FAILURE() << "accepted a file that breaks rule " << rule;
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(safetensors_errc_name(e.code()), rule) << e.what();
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("[safetensors] ", 0), 0u) << message;
    EXPECT_NE(message.find(path.substr(path.rfind('/') + 1)), std::string::npos)
        << "message does not name the file: " << message;
  }
}

}  // namespace

TEST(SafetensorsNegativeCorpus, EachFileFailsWithItsOwnError) {
  const Json manifest = read_json_file(test::source_path(kCorpus + "MANIFEST.json"), "test");
  std::set<std::string> rules;
  for (const auto& [file, rule] : manifest["files"].items()) {
    expect_rejected(test::source_path(kCorpus + file), rule.get<std::string>(),
                    [](const std::string& p) { SafetensorsFile::open(p); });
    EXPECT_TRUE(rules.insert(rule.get<std::string>()).second) << "two files for rule " << rule;
  }
  for (const auto& [dir, rule] : manifest["dirs"].items()) {
    expect_rejected(test::source_path(kCorpus + dir), rule.get<std::string>(),
                    [](const std::string& p) { SafetensorsCheckpoint::open_dir(p); });
    EXPECT_TRUE(rules.insert(rule.get<std::string>()).second) << "two entries for rule " << rule;
  }
  EXPECT_EQ(rules.size(), 23u);
}

TEST(SafetensorsNegativeCorpus, MessagesAreDistinct) {
  const Json manifest = read_json_file(test::source_path(kCorpus + "MANIFEST.json"), "test");
  std::set<std::string> messages;
  for (const auto& [file, rule] : manifest["files"].items()) {
    try {
      SafetensorsFile::open(test::source_path(kCorpus + file));
    } catch (const SafetensorsError& e) {
      EXPECT_TRUE(messages.insert(e.what()).second) << e.what();
    }
  }
  EXPECT_EQ(messages.size(), manifest["files"].size());
}

TEST(SafetensorsHeader, AcceptsPaddingAndEmptyFiles) {
  // A header with only metadata and no tensors is valid; trailing spaces are padding.
  std::string header = R"({"__metadata__":{"a":"b"}})";
  header.append(6, ' ');
  std::string file(8, '\0');
  file[0] = static_cast<char>(header.size());
  file += header;
  SafetensorsHeader parsed =
      parse_safetensors_header(std::as_bytes(std::span(file.data(), file.size())), "mem");
  EXPECT_TRUE(parsed.tensors.empty());
  EXPECT_EQ(parsed.metadata.at("a"), "b");
}

}  // namespace sft
