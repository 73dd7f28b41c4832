// --gpus: "all" or a list of device ids, checked against the devices there are.
#include "server/gpu_list.h"

#include "gtest/gtest.h"

namespace gphkv::server {
namespace {

TEST(GpuList, AllMeansEveryDevice) {
  auto parsed = parse_gpu_list("all");
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->has_value());
  auto devices = resolve_gpus(*parsed, 3);
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(*devices, (std::vector<int>{0, 1, 2}));
}

TEST(GpuList, ListKeepsItsOrder) {
  auto parsed = parse_gpu_list("2, 0");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ(**parsed, (std::vector<int>{2, 0}));
  auto devices = resolve_gpus(*parsed, 4);
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(*devices, (std::vector<int>{2, 0}));
}

TEST(GpuList, BadListsAreRefusedWithTheReason) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"", "empty"}, Case{"0,,1", "is not a CUDA device id"}, Case{"-1", "is not a CUDA device"},
                        Case{"one", "is not a CUDA device id"}, Case{"0,1,0", "listed twice"}}) {
    auto parsed = parse_gpu_list(c.text);
    ASSERT_FALSE(parsed.ok()) << "'" << c.text << "' was accepted";
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(c.says), absl::string_view::npos) << parsed.status();
  }
}

TEST(GpuList, UnknownDeviceIsRefusedNamingTheDevicesThereAre) {
  auto devices = resolve_gpus(std::vector<int>{0, 2}, 2);
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(devices.status().message().find("no CUDA device 2"), absl::string_view::npos) << devices.status();
  EXPECT_NE(devices.status().message().find("ids 0 to 1"), absl::string_view::npos) << devices.status();
  auto none = resolve_gpus(std::nullopt, 0);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gphkv::server
