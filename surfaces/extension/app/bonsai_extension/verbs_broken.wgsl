// Deliberately invalid WGSL: the verbs check expects ShaderError naming this file.

@compute @workgroup_size(1)
fn main() {
    let x: u32 = undefined_name;
}
