# Sourced by the GPU scripts (`. bench/gpu_env.sh`, from the repository root) on
# a machine with an NVIDIA GPU: unpacks the Vulkan loader and the GL vendor
# libraries that NVIDIA's Vulkan driver needs (the debs staged in .gl/: libvulkan1
# alone finds no adapter), puts CUDA's libraries on the library path, and points
# the Vulkan loader at NVIDIA's driver manifest unless VK_DRIVER_FILES is set.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -z "${VK_DRIVER_FILES:-}" ] && [ -f $icd ] && export VK_DRIVER_FILES=$icd
true
