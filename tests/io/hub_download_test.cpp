// The Hub client against the tests' Hub (hub_server.h): the cache layout huggingface_hub
// writes, resumed and retried transfers, checksums, and the errors a user sees.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/hf_hub.h"
#include "io/hub/download_file.h"
#include "io/hub/snapshot.h"
#include "io/hub_server.h"
#include "scoped_env.h"
#include "test_paths.h"

namespace sft::hub {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using test::ScopedEnv;

const std::string kModel = test::source_path("tests/fixtures/generate_text");
const std::string kDataset = test::source_path("tests/fixtures/hub/dataset");
const std::string kGsm8k = test::source_path("tests/fixtures/parquet/hub_gsm8k");

std::vector<test::HubRepoSpec> repos() {
  return {{false, "org/tiny", kModel, "main"},
          {true, "org/text", kDataset, "main"},
          {true, "openai/gsm8k", kGsm8k, "main"}};
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Each test: a server, an empty cache, HF_ENDPOINT/HF_HUB_CACHE pointing at them, no token.
class HubDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<test::HubTestServer>(repos());
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    cache_ = test::fresh_output_dir(std::string("hub_dl_") + info->name());
    endpoint_.emplace("HF_ENDPOINT", server_->endpoint().c_str());
    cache_env_.emplace("HF_HUB_CACHE", cache_.c_str());
  }
  std::string download(const std::string& id, bool dataset = false,
                       const std::string& revision = "main", const std::string& config = "") {
    SnapshotOptions options;
    options.retry = {4, 1, 5};  // fast retries
    options.progress = false;
    options.dataset_config = config;
    return download_snapshot(cache_, {dataset ? HubRepoType::kDataset : HubRepoType::kModel, id},
                             revision, options);
  }
  int count_requests(const std::string& needle) const {
    int n = 0;
    for (const std::string& r : server_->requests()) n += r.find(needle) != std::string::npos;
    return n;
  }

  std::unique_ptr<test::HubTestServer> server_;
  std::string cache_;
  std::optional<ScopedEnv> endpoint_, cache_env_;
  ScopedEnv token_{"HF_TOKEN", nullptr}, token_path_{"HF_TOKEN_PATH", "/nonexistent/token"};
  ScopedEnv offline_{"HF_HUB_OFFLINE", nullptr};
};

TEST_F(HubDownload, WritesTheCacheAsHuggingfaceHubDoes) {
  const std::string snapshot = download("org/tiny");
  const std::string commit = server_->commit_of("org/tiny");
  const fs::path repo = fs::path(cache_) / "models--org--tiny";
  EXPECT_EQ(snapshot, (repo / "snapshots" / commit).string());
  std::ifstream ref(repo / "refs" / "main");
  std::string ref_text((std::istreambuf_iterator<char>(ref)), std::istreambuf_iterator<char>());
  EXPECT_EQ(ref_text, commit);  // bare, no newline
  // LFS: the blob is named by its sha256, and the link is relative.
  const fs::path weights = fs::path(snapshot) / "model.safetensors";
  ASSERT_TRUE(fs::is_symlink(weights));
  const std::string sha = sha256_file(kModel + "/model.safetensors");
  EXPECT_EQ(fs::read_symlink(weights).string(), "../../blobs/" + sha);
  EXPECT_EQ(sha256_file(weights.string()), sha);
  for (const char* f :
       {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    EXPECT_TRUE(fs::is_symlink(fs::path(snapshot) / f)) << f;
    std::ifstream a(fs::path(snapshot) / f), b(fs::path(kModel) / f);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
              std::string(std::istreambuf_iterator<char>(b), {}))
        << f;
  }
  // Only what a run needs: no test goldens of the fixture folder.
  EXPECT_FALSE(fs::exists(fs::path(snapshot) / "expected.json"));
  EXPECT_FALSE(fs::exists(fs::path(snapshot) / "messages.json"));
  for (const auto& e : fs::directory_iterator(repo / "blobs"))
    EXPECT_THAT(e.path().string(), Not(HasSubstr(".incomplete")));

  // resolve_hub_folder finds it in the cache and asks the network nothing.
  const size_t before = server_->requests().size();
  EXPECT_EQ(resolve_hub_folder("org/tiny", HubRepoType::kModel), snapshot);
  EXPECT_EQ(server_->requests().size(), before);
  // A second download fetches no bytes again.
  download("org/tiny");
  EXPECT_EQ(count_requests("GET /lfs/"), 1);
}

TEST_F(HubDownload, ResolveHubFolderDownloadsWhatIsMissing) {
  EXPECT_EQ(resolve_hub_folder("org/tiny", HubRepoType::kModel),
            (fs::path(cache_) / "models--org--tiny" / "snapshots" / server_->commit_of("org/tiny"))
                .string());
  const std::string data = resolve_hub_folder("org/text", HubRepoType::kDataset);
  const fs::path train = fs::path(data) / "data" / "train-00000-of-00001.jsonl";
  ASSERT_TRUE(fs::is_symlink(train));
  EXPECT_THAT(fs::read_symlink(train).string(), ::testing::StartsWith("../../../blobs/"));
  EXPECT_TRUE(fs::exists(fs::path(data) / "README.md"));
}

TEST_F(HubDownload, DatasetConfigChoosesItsFiles) {
  const std::string snapshot = download("openai/gsm8k", true, "main", "main");
  EXPECT_TRUE(fs::exists(fs::path(snapshot) / "main" / "train-00000-of-00002.parquet"));
  EXPECT_TRUE(fs::exists(fs::path(snapshot) / "main" / "test-00000-of-00001.parquet"));
  // Cached with config "main": that config resolves offline, another one asks the Hub.
  const size_t before = server_->requests().size();
  EXPECT_EQ(resolve_hub_folder("openai/gsm8k", HubRepoType::kDataset, "main", "main"), snapshot);
  EXPECT_EQ(server_->requests().size(), before);
  resolve_hub_folder("openai/gsm8k", HubRepoType::kDataset, "main", "socratic");
  EXPECT_GT(server_->requests().size(), before);
}

TEST_F(HubDownload, ResumesADroppedConnectionWithARange) {
  test::HubFaults faults;
  faults.drop_file = "model.safetensors";
  faults.drop_times = 2;
  server_->set_faults(faults);
  const std::string snapshot = download("org/tiny");
  EXPECT_EQ(sha256_file(snapshot + "/model.safetensors"),
            sha256_file(kModel + "/model.safetensors"));
  EXPECT_GE(count_requests("GET /lfs/"), 3);
  EXPECT_GE(count_requests(" range="), 2);  // the rest, not the whole file again
}

TEST_F(HubDownload, ResumesAnIncompleteFileLeftByAnEarlierRun) {
  const std::string sha = sha256_file(kModel + "/model.safetensors");
  const fs::path blobs = fs::path(cache_) / "models--org--tiny" / "blobs";
  fs::create_directories(blobs);
  std::ifstream in(kModel + "/model.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(blobs / (sha + ".incomplete"), std::ios::binary) << bytes.substr(0, 1000);
  const std::string snapshot = download("org/tiny");
  EXPECT_EQ(sha256_file(snapshot + "/model.safetensors"), sha);
  EXPECT_EQ(count_requests(" range=1000"), 1);
  EXPECT_FALSE(fs::exists(blobs / (sha + ".incomplete")));
}

TEST_F(HubDownload, RetriesAWrongChecksumThenGivesUpWithoutABlob) {
  test::HubFaults faults;
  faults.corrupt_file = "model.safetensors";
  faults.corrupt_times = 1;
  server_->set_faults(faults);
  const std::string snapshot = download("org/tiny");
  const std::string sha = sha256_file(kModel + "/model.safetensors");
  EXPECT_EQ(sha256_file(snapshot + "/model.safetensors"), sha);

  const std::string other = test::fresh_output_dir("hub_dl_corrupt_always");
  cache_ = other;
  faults.corrupt_times = 100;
  server_->set_faults(faults);
  const std::string message = message_of([&] { download("org/tiny"); });
  EXPECT_THAT(message, HasSubstr("[hub] cannot download model.safetensors of model 'org/tiny'"));
  EXPECT_THAT(message, HasSubstr("sha256"));
  const fs::path repo = fs::path(other) / "models--org--tiny";
  EXPECT_FALSE(fs::exists(repo / "blobs" / sha));
  EXPECT_FALSE(fs::exists(repo / "blobs" / (sha + ".incomplete")));
  EXPECT_FALSE(
      fs::exists(repo / "snapshots" / server_->commit_of("org/tiny") / "model.safetensors"));
  EXPECT_FALSE(fs::exists(repo / "refs" / "main"));
}

TEST_F(HubDownload, RetriesServerErrorsAndRateLimits) {
  test::HubFaults faults;
  faults.status_times = 3;
  faults.status = 500;
  server_->set_faults(faults);
  download("org/tiny");
  cache_ = test::fresh_output_dir("hub_dl_429");
  faults.status = 429;
  server_->set_faults(faults);
  download("org/tiny");
  // More than the tries allowed: the status is reported.
  cache_ = test::fresh_output_dir("hub_dl_500_always");
  faults.status_times = 100;
  faults.status = 503;
  server_->set_faults(faults);
  EXPECT_THAT(message_of([&] { download("org/tiny"); }), HasSubstr("answered HTTP 503"));
}

TEST_F(HubDownload, FollowsARenamedRepo) {
  test::HubFaults faults;
  faults.renamed = {{"org/old-tiny", "org/tiny"}};
  server_->set_faults(faults);
  const std::string snapshot = download("org/old-tiny");  // cached under the name asked for
  EXPECT_EQ(snapshot, (fs::path(cache_) / "models--org--old-tiny" / "snapshots" /
                       server_->commit_of("org/tiny"))
                          .string());
  EXPECT_EQ(sha256_file(snapshot + "/config.json"), sha256_file(kModel + "/config.json"));
}

TEST_F(HubDownload, GatedRepoNeedsAToken) {
  test::HubFaults faults;
  faults.gated = {"org/tiny"};
  server_->set_faults(faults);
  const std::string no_token = message_of([&] { download("org/tiny"); });
  EXPECT_THAT(no_token, HasSubstr("refused access (HTTP 401)"));
  EXPECT_THAT(no_token, HasSubstr("no token was sent"));
  EXPECT_THAT(no_token, HasSubstr("HF_TOKEN"));
  {
    ScopedEnv wrong("HF_TOKEN", "hf_wrong");
    const std::string message = message_of([&] { download("org/tiny"); });
    EXPECT_THAT(message, HasSubstr("HTTP 403"));
    EXPECT_THAT(message, HasSubstr("the token sent is not allowed"));
  }
  // The token file huggingface_hub writes works as well as the variable.
  const std::string token_file = cache_ + "/token";
  std::ofstream(token_file) << "hf_test_token\n";
  ScopedEnv path("HF_TOKEN_PATH", token_file.c_str());
  download("org/tiny");
}

TEST_F(HubDownload, NotFoundNamesTheRepoOrRevisionAndTheClosestCached) {
  download("org/tiny");
  const std::string repo = message_of([&] { download("org/tinny"); });
  EXPECT_THAT(repo, HasSubstr("model 'org/tinny' not found on the Hub"));
  EXPECT_THAT(repo, HasSubstr("the closest in the cache is 'org/tiny'"));
  const std::string revision = message_of([&] { download("org/tiny", false, "v9"); });
  EXPECT_THAT(revision, HasSubstr("revision 'v9' of model 'org/tiny' not found"));
  EXPECT_THAT(revision, HasSubstr("cached revisions: main"));
  EXPECT_THAT(message_of([&] { download("org/text"); }), HasSubstr("model 'org/text' not found"));
}

TEST_F(HubDownload, OfflineUsesTheCacheOnlyAndSaysSo) {
  ScopedEnv offline("HF_HUB_OFFLINE", "1");
  const std::string message =
      message_of([&] { resolve_hub_folder("org/tiny", HubRepoType::kModel); });
  EXPECT_THAT(message, HasSubstr("HF_HUB_OFFLINE=1 forbids downloading"));
  EXPECT_THAT(message, HasSubstr(cache_));
  EXPECT_TRUE(server_->requests().empty());
  {
    ScopedEnv online("HF_HUB_OFFLINE", "0");
    resolve_hub_folder("org/tiny", HubRepoType::kModel);
  }
  const size_t before = server_->requests().size();
  resolve_hub_folder("org/tiny", HubRepoType::kModel);
  EXPECT_EQ(server_->requests().size(), before);
}

TEST_F(HubDownload, ADiskTooSmallIsRefusedBeforeDownloading) {
  test::HubFaults faults;
  faults.huge_file = "model.safetensors";
  server_->set_faults(faults);
  const std::string message = message_of([&] { download("org/tiny"); });
  EXPECT_THAT(message, HasSubstr("model 'org/tiny' needs 1153PB in " + cache_ +
                                 "/models--org--tiny/blobs but the disk has"));
  EXPECT_THAT(message, HasSubstr("set HF_HUB_CACHE to a folder on a bigger disk"));
  EXPECT_EQ(count_requests("GET /lfs/"), 0);
  EXPECT_FALSE(fs::exists(fs::path(cache_) / "models--org--tiny" / "snapshots"));
}

TEST_F(HubDownload, NoServerSaysWhereItTriedAndHowToWorkOffline) {
  const std::string endpoint = server_->endpoint();
  server_.reset();  // nothing listens on that port now
  const std::string message = message_of([&] { download("org/tiny"); });
  EXPECT_THAT(message, HasSubstr("no answer from " + endpoint));
  EXPECT_THAT(message, HasSubstr("HF_HUB_OFFLINE=1"));
}

}  // namespace
}  // namespace sft::hub
