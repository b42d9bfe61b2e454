// What benchmarks report about the machine, and the OpenBLAS core type ropelab asks for
// (util/machine.h; apps/runtime_env.cpp applies it before LibTorch loads).
#include "ropelab/util/machine.h"

#include <dlfcn.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "../test_util.h"

using namespace ropelab;

TEST(OpenblasCore, AvxFiveTwelveGetsSkylakeXUnlessOpenblasChoseAnAvxFiveTwelveCore) {
  // An AMD EPYC with AVX-512: OpenBLAS 0.3.21 picks its AVX2 kernels (Zen or Haswell).
  EXPECT_EQ(openblas_core_correction("Zen", true, true), "SkylakeX");
  EXPECT_EQ(openblas_core_correction("Haswell", true, true), "SkylakeX");
  EXPECT_EQ(openblas_core_correction("Prescott", true, true), "SkylakeX");
  for (const char* kept : {"SkylakeX", "skylakex", "Cooperlake", "SapphireRapids"})
    EXPECT_EQ(openblas_core_correction(kept, true, true), "") << kept;
}

TEST(OpenblasCore, AvxTwoGetsHaswellOnlyInPlaceOfAPreAvxTwoCore) {
  EXPECT_EQ(openblas_core_correction("Prescott", true, false), "Haswell");
  EXPECT_EQ(openblas_core_correction("sandybridge", true, false), "Haswell");
  EXPECT_EQ(openblas_core_correction("Zen", true, false), "");
  EXPECT_EQ(openblas_core_correction("Haswell", true, false), "");
  EXPECT_EQ(openblas_core_correction("Prescott", false, false), "");  // nothing better to ask for
}

TEST(MachineInfo, NamesTheCpuTheIsaAndTheBlas) {
  const auto info = machine_info();
  EXPECT_NE(info.cpu.find(" cores"), std::string::npos) << info.cpu;
  EXPECT_TRUE(info.aten_isa == "DEFAULT" || info.aten_isa == "AVX2" || info.aten_isa == "AVX512") << info.aten_isa;
  // with OpenBLAS loaded, its core type is one name, no spaces; with another BLAS, none
  EXPECT_EQ(info.blas_core.empty(), dlsym(RTLD_DEFAULT, "openblas_get_corename") == nullptr);
  EXPECT_EQ(info.blas_core.find(' '), std::string::npos) << info.blas_core;
}

TEST(MachineInfo, CpuDescriptionGivesTheNameFamilyAndModelOfTheFirstProcessor) {
  // two processors of an x86 /proc/cpuinfo (tab-aligned keys; "model" also begins "model name")
  std::istringstream x86(
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"
      "stepping\t: 1\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
      "model name\t: Other\n");
  EXPECT_EQ(cpu_description(x86, 2), "AMD EPYC (family 26, model 2), 2 cores");
  std::istringstream name_only("model name\t: Some CPU\n");  // no family or model: the name alone
  EXPECT_EQ(cpu_description(name_only, 8), "Some CPU, 8 cores");
  std::istringstream arm("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n");
  EXPECT_EQ(cpu_description(arm, 4), "unknown CPU, 4 cores");
  // machine_info names this machine the same way
  std::ifstream here("/proc/cpuinfo");
  if (here) {
    EXPECT_EQ(machine_info().cpu, cpu_description(here, std::thread::hardware_concurrency()));
  }
}

TEST(MachineInfo, DescribeIsTheOneLineOfBenchReportsAndTrainingLogs) {
  MachineInfo machine{"AMD EPYC (family 26, model 2), 2 cores", "AVX2", "Haswell", "GOMP_SPINCOUNT=3000"};
  EXPECT_EQ(describe(machine),
            "AMD EPYC (family 26, model 2), 2 cores; ATen kernels AVX2; OpenBLAS core Haswell; GOMP_SPINCOUNT=3000");
  machine.blas_core = machine.thread_env = "";
  EXPECT_EQ(describe(machine),
            "AMD EPYC (family 26, model 2), 2 cores; ATen kernels AVX2; OpenBLAS core (not "
            "OpenBLAS); thread settings: defaults");
}
