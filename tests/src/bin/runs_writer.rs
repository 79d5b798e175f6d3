//! Run-root test helper: creates and removes runs for one caller until it
//! is killed, so that a test can kill it at any point of an update of the
//! run root and its per-caller index. `runs_writer <root> <caller>`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(who)) = (args.get(1), args.get(2)) else {
        std::process::exit(2);
    };
    let Ok(root) = hardened_mcp::runs::RunRoot::open(path) else {
        std::process::exit(3);
    };
    let Ok(caller) = hardened_mcp::CallerId::new(who) else {
        std::process::exit(2);
    };
    let file = hardened_mcp::runs::FileName::fixed("data.txt");
    let mut kept = Vec::new();
    for i in 0u64.. {
        let Ok((_, run)) = root.create(&caller) else {
            std::process::exit(4);
        };
        let _ = run.write_atomic(&file, &i.to_le_bytes());
        if i % 3 == 0 {
            let _ = run.remove();
        } else {
            kept.push(run);
        }
        if kept.len() > 8 {
            let _ = kept.remove(0).remove();
        }
    }
}
