module.exports = { title: 'Site', presets: [['classic', { docs: { path: 'docs' } }]] };
